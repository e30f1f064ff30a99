#!/usr/bin/env bash
# Removes a departed Kubernetes node (scale-down), as root on the Salt master, one line per step:
#   1. the Kubernetes master vacates it (microk8s.vacate_node): refuses a dqlite voter an HA
#      cluster cannot lose, before touching anything; else cordons and drains it, giving up after
#      DRAIN_SECONDS (default 300), since its machine is deleted anyway;
#   2. the node leaves the cluster itself (microk8s.leave); a node that does not answer is
#      removed without it;
#   3. the master forgets it (microk8s.forget_node: plain remove-node after a clean leave,
#      --force for a dqlite member that did not leave);
#   4. its minion key and its ledger entry are deleted.
# Any of it may already be done, so running it again is harmless.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="remove-node.sh MASTER_ID NODE_ID NODE_ADDRESS [DRAIN_SECONDS]"
# How long salt waits for a minion that does not answer microk8s.leave (a live minion's running
# job is waited for: salt asks it with saltutil.find_job before giving up).
LEAVE_SECONDS=30

[[ $# -eq 3 || $# -eq 4 ]] || koo_usage_error "expected three or four arguments, got $#"
master=$1 node=$2 address=$3 drain_seconds=${4:-300}
koo_require_dns_name MASTER_ID "$master"
koo_require_dns_name NODE_ID "$node"
koo_require_ipv4 NODE_ADDRESS "$address"
[[ $master != "$node" ]] || koo_usage_error "NODE_ID $node is the Kubernetes master itself"
koo_require_drain_seconds "$drain_seconds"

host=$(koo_host)
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# 1. Out of service, unless it is a voter the cluster cannot lose.
koo_salt "$work/vacate" $((drain_seconds + 90)) "$master" microk8s.vacate_node "$address" "$drain_seconds"
result=$("${KOO_SALT_OUTPUT[@]}" vacate-node "$master" <"$work/vacate.json")
vacated=yes
case $result in
  drained\ *)
    read -r _ name seconds <<<"$result"
    echo "drained node $name ($address) on $master in $seconds s"
    ;;
  gave-up\ *)
    read -r _ name seconds reason <<<"$result"
    echo "drain of node $name ($address) gave up after $seconds s ($reason); going on: its machine is deleted anyway"
    ;;
  no-node) echo "node $node ($address) is a dqlite member without a Kubernetes node; nothing to drain" ;;
  absent) vacated=no ;;
  refused\ *) koo_die 1 "cannot remove node $node ($address): ${result#refused }" ;;
  no-answer) koo_die 1 "cannot remove node $node ($address): $master did not answer microk8s.vacate_node$(koo_salt_said "$work/vacate")" ;;
  *) koo_die 1 "cannot remove node $node ($address): microk8s.vacate_node on $master failed: ${result#error }" ;;
esac

if [[ $vacated == yes ]]; then
  # 2. The node leaves by itself; it may be down already.
  koo_salt "$work/leave" "$LEAVE_SECONDS" "$node" microk8s.leave
  result=$("${KOO_SALT_OUTPUT[@]}" leave "$node" <"$work/leave.json")
  case $result in
    left) echo "node $node left the microk8s cluster" ;;
    no-answer) echo "node $node did not answer microk8s.leave$(koo_salt_said "$work/leave"); removing it without leaving" ;;
    *) echo "node $node did not leave (microk8s.leave failed: ${result#error }); removing it without leaving" ;;
  esac

  # 3. The master forgets it.
  koo_salt "$work/forget" 30 "$master" microk8s.forget_node "$address"
  result=$("${KOO_SALT_OUTPUT[@]}" forget-node "$master" <"$work/forget.json")
  case $result in
    removed) echo "removed node $node ($address) from the microk8s cluster on $master" ;;
    absent) echo "node $node ($address) is not in the microk8s cluster on $master any more; nothing to remove" ;;
    no-answer) koo_die 1 "cannot remove node $node ($address): $master did not answer microk8s.forget_node$(koo_salt_said "$work/forget")" ;;
    *) koo_die 1 "cannot remove node $node ($address): microk8s.forget_node on $master failed: ${result#error }" ;;
  esac
else
  echo "node $node ($address) is not in the microk8s cluster on $master; nothing to remove"
fi

# read_key_status: the node's key status (accepted, pending, rejected, denied or absent) into
# $key_status.
read_key_status() {
  koo_key_status "$work" "$node" >"$work/status"
  read -r key_status _ <"$work/status"
}

# 4. The departed machine's record goes with its key (accept-minion-keys.sh keeps it).
koo_ledger_set "$node"
read_key_status
if [[ $key_status == absent ]]; then
  echo "minion key of $node is already absent on $host"
  exit 0
fi
koo_salt_key delete "$node"
read_key_status
# The node's machine runs until Terraform deletes it after this script: its minion may ask the
# master again at once, which leaves its key pending, never accepted.
[[ $key_status == absent || $key_status == pending ]] ||
  koo_die 1 "salt-key --delete=$node left the key $key_status on $host"
echo "deleted minion key: $node"
