#!/usr/bin/env bash
# Rolls a new microk8s channel through the cluster, as root on the Salt master, before orch.deploy
# runs: asks the Kubernetes master which nodes run an older minor (microk8s.upgrade_plan), and when
# there are some, runs orch.upgrade for exactly those (orchestrate.sh, pillar orchestration:roll and
# orchestration:channel): one node at a time, drain -> snap refresh -> Ready at the new minor ->
# uncordon. A channel several minors ahead is rolled one minor at a time, every node through each
# minor before any goes on to the next (Kubernetes' version skew policy); the first failure stops
# the roll. CHANNEL "" (microk8s_channel unset) keeps the channel the nodes track: nothing rolls,
# but nodes a failed roll left behind the master. A cluster already at the channel, or one that
# does not exist yet (a first deployment), is left to orch.deploy.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="upgrade.sh MASTER_ID CHANNEL (\"\": microk8s_channel unset, keep the nodes' channel)"

[[ $# -eq 2 ]] || koo_usage_error "expected two arguments, got $#"
master=$1 channel=$2
koo_require_dns_name MASTER_ID "$master"
if [[ -n $channel ]]; then
  [[ $channel =~ ^1\.[0-9]+/(stable|candidate|beta|edge)$ ]] ||
    koo_usage_error "CHANNEL must be 1.<minor>/<stable|candidate|beta|edge> or empty, got \"$channel\""
  asked="microk8s_channel $channel"
else
  asked="microk8s_channel unset"
fi

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# call NAME FUNCTION [ARG...]: runs FUNCTION on the Kubernetes master, its JSON in $work/NAME.json.
call() {
  koo_salt "$work/$1" 120 "$master" "${@:2}"
}

# minor CHANNEL: the Kubernetes minor of 1.<minor>/<risk>.
minor() {
  local track=${1%%/*}
  echo "${track#1.}"
}

# The plan is the module's: the master needs this tree's modules and pillar (the node list) first.
call sync saltutil.sync_all
call pillar saltutil.refresh_pillar wait=True
call plan microk8s.upgrade_plan ${channel:+"$channel"}
mapfile -t plan < <("${KOO_SALT_OUTPUT[@]}" upgrade-plan "$master" <"$work/plan.json")
read -r verdict nodes target roll <<<"${plan[0]:-}" || true
case $verdict in
  roll) ;;
  absent)
    # Salt loads the microk8s module only once the snap is there: orch.deploy installs it.
    echo "$asked: microk8s is not installed on $master yet; orch.deploy installs it"
    exit 0
    ;;
  no-answer)
    koo_die 1 "cannot plan the upgrade to $asked: $master did not answer microk8s.upgrade_plan$(koo_salt_said "$work/plan" last)"
    ;;
  *)
    reason=${plan[0]:-}
    reason=${reason#error }
    koo_die 1 "cannot upgrade to $asked: ${reason#ERROR: }"
    ;;
esac

if [[ $nodes -eq 0 ]]; then
  echo "$asked: no node runs microk8s yet; orch.deploy installs it"
  exit 0
fi
steps=("${plan[@]:1}")
if [[ ${#steps[@]} -eq 0 ]]; then
  if [[ -n $channel ]]; then
    echo "$asked: all $nodes nodes in the cluster run 1.$(minor "$target"); nothing to roll"
  else
    echo "$asked: the cluster keeps $target, the channel its nodes track; nothing to roll"
  fi
  exit 0
fi
read -r -a ids <<<"$roll"
if [[ ${#steps[@]} -gt 1 ]]; then
  channels=()
  for step in "${steps[@]}"; do
    read -r _ step_channel _ <<<"$step"
    channels+=("$step_channel")
  done
  echo "$asked: rolling ${#ids[@]} of $nodes nodes to 1.$(minor "$target") one minor at a time, in ${#steps[@]} steps: $(koo_join ", " "${channels[@]}")"
fi
for index in "${!steps[@]}"; do
  read -r _ step_channel step_roll <<<"${steps[$index]}"
  read -r -a step_ids <<<"$step_roll"
  label=""
  [[ ${#steps[@]} -eq 1 ]] || label=" (step $((index + 1)) of ${#steps[@]})"
  echo "$asked: rolling ${#step_ids[@]} of $nodes nodes to 1.$(minor "$step_channel")$label, one at a time: $(koo_join ", " "${step_ids[@]}")"
  pillar=$(printf '"%s",' "${step_ids[@]}")
  # The first step syncs the nodes' modules and pillar; the next ones find them synced.
  synced=false
  [[ $index -eq 0 ]] || synced=true
  # The first failure stops the roll: the nodes rolled so far stay at this minor, the others below.
  bash "$KOO_PROVISIONERS/orchestrate.sh" orch.upgrade \
    "{\"orchestration\": {\"roll\": [${pillar%,}], \"channel\": \"$step_channel\", \"synced\": $synced}}"
done
