#!/usr/bin/env bash
# Reboots the Kubernetes nodes whose package updates need it, as root on the Salt master, after
# orch.deploy (whose highstate updates the packages): asks each node (kube_on_os.reboot_required,
# /run/reboot-required), and when some need a reboot and ROLL is true, runs orch.reboot for
# exactly those (orchestrate.sh, pillar orchestration:roll): one node at a time, drain -> reboot ->
# back with a new boot id and Ready -> uncordon. With ROLL false it only names them.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="reboot.sh ROLL NODE_ID... (ROLL: true or false, from reboot_for_updates)"

[[ $# -ge 2 ]] || koo_usage_error "expected ROLL and at least one NODE_ID, got $# arguments"
roll=$1
shift
[[ $roll == true || $roll == false ]] || koo_usage_error "ROLL must be true or false, got \"$roll\""
for node in "$@"; do
  koo_require_dns_name NODE_ID "$node"
done
nodes=("$@")
targets=$(koo_join "," "${nodes[@]}")

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# The nodes need this tree's kube_on_os module (a cluster deployed before it has an older one).
koo_salt "$work/sync" 120 --list "$targets" saltutil.sync_modules
koo_salt "$work/plan" 120 --list "$targets" kube_on_os.reboot_required
read -r verdict rest <<<"$("${KOO_SALT_OUTPUT[@]}" reboot-plan "${nodes[@]}" <"$work/plan.json")" || true
case $verdict in
  needs) ;;
  no-answer)
    koo_die 1 "cannot tell whether $rest needs a reboot: it did not answer kube_on_os.reboot_required$(koo_salt_said "$work/plan" last)"
    ;;
  *)
    koo_die 1 "cannot tell whether ${rest%% *} needs a reboot: ${rest#* }"
    ;;
esac

read -r -a needs <<<"${rest:-}"
if [[ ${#needs[@]} -eq 0 ]]; then
  echo "reboot_for_updates: no Kubernetes node needs a reboot for its updates"
  exit 0
fi
count="${#needs[@]} of ${#nodes[@]} Kubernetes nodes"
if [[ $roll == false ]]; then
  echo "reboot_for_updates is off: $count need a reboot for their updates: $(koo_join ", " "${needs[@]}"); set it to true to roll them"
  exit 0
fi
echo "reboot_for_updates: rebooting $count for their updates, one at a time: $(koo_join ", " "${needs[@]}")"
pillar=$(printf '"%s",' "${needs[@]}")
exec bash "$KOO_PROVISIONERS/orchestrate.sh" orch.reboot "{\"orchestration\": {\"roll\": [${pillar%,}]}}"
