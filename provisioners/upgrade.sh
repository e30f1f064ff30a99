#!/usr/bin/env bash
# Rolls a new microk8s channel through the cluster, as root on the Salt master, before orch.deploy
# runs: asks the Kubernetes master which nodes run an older minor (microk8s.upgrade_plan), and when
# there are some, runs orch.upgrade for exactly those (orchestrate.sh, pillar orchestration:roll): one
# node at a time, drain -> snap refresh -> Ready at the new minor -> uncordon. A cluster already
# at the channel, or one that does not exist yet (a first deployment), is left to orch.deploy.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="upgrade.sh MASTER_ID CHANNEL"

[[ $# -eq 2 ]] || koo_usage_error "expected two arguments, got $#"
master=$1 channel=$2
koo_is_dns_name "$master" || koo_usage_error "MASTER_ID \"$master\" is not a lower-case DNS name"
[[ $channel =~ ^1\.([0-9]+)/(stable|candidate|beta|edge)$ ]] ||
  koo_usage_error "CHANNEL must be 1.<minor>/<stable|candidate|beta|edge>, got \"$channel\""
minor=${BASH_REMATCH[1]}

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# call NAME FUNCTION [ARG...]: runs FUNCTION on the Kubernetes master, its JSON in $work/NAME.json.
call() {
  local name=$1
  shift
  # salt exits 0 even when the function raised; the return value tells.
  salt --out=json --static --timeout=120 "$master" "$@" >"$work/$name.json" 2>"$work/$name.err" || true
}

# The plan is the module's: the master needs this tree's modules and pillar (the node list) first.
call sync saltutil.sync_all
call pillar saltutil.refresh_pillar wait=True
call plan microk8s.upgrade_plan "$channel"
read -r verdict nodes roll <<<"$("${KOO_SALT_OUTPUT[@]}" upgrade-plan "$master" <"$work/plan.json")" || true
case $verdict in
  roll) ;;
  absent)
    # Salt loads the microk8s module only once the snap is there: orch.deploy installs it.
    echo "microk8s_channel $channel: microk8s is not installed on $master yet; orch.deploy installs it"
    exit 0
    ;;
  no-answer)
    reason=$(koo_last_line "$(cat "$work/plan.err")")
    koo_die 1 "cannot plan the upgrade to microk8s_channel $channel: $master did not answer microk8s.upgrade_plan${reason:+ (salt: $reason)}"
    ;;
  *)
    reason=$("${KOO_SALT_OUTPUT[@]}" upgrade-plan "$master" <"$work/plan.json")
    reason=${reason#error }
    koo_die 1 "cannot upgrade to microk8s_channel $channel: ${reason#ERROR: }"
    ;;
esac

if [[ $nodes -eq 0 ]]; then
  echo "microk8s_channel $channel: no node runs microk8s yet; orch.deploy installs it"
  exit 0
fi
if [[ -z ${roll:-} ]]; then
  echo "microk8s_channel $channel: all $nodes nodes in the cluster run 1.$minor; nothing to roll"
  exit 0
fi
read -r -a ids <<<"$roll"
echo "microk8s_channel $channel: rolling ${#ids[@]} of $nodes nodes to 1.$minor, one at a time: $(koo_join ", " "${ids[@]}")"
pillar=$(printf '"%s",' "${ids[@]}")
exec bash "$KOO_PROVISIONERS/orchestrate.sh" orch.upgrade "{\"orchestration\": {\"roll\": [${pillar%,}]}}"
