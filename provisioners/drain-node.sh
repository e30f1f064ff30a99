#!/usr/bin/env bash
# Drains a Kubernetes node before Terraform deletes its machine to replace it (-replace, npm run
# roll), as root on the Salt master: the destroy-time hook of the node's NodeDrain record
# (constructs/provisioning/node-drain.ts). OPERATOR, a control-plane node (the Kubernetes master;
# for the master itself the next voter), notes the node's boot id and cordons and drains it
# (microk8s.drain_for_replacement, kubectl giving up after DRAIN_SECONDS, default 300); once the
# new machine has joined and is Ready with another boot id, orch.deploy uncordons it
# (microk8s.uncordon_replaced). The machine goes whatever happens here, so a drain that fails is
# reported in one line and the script still succeeds; so is a node Kubernetes does not know (a
# machine that never joined) and an operator that does not answer (a cluster being destroyed).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="drain-node.sh OPERATOR_ID NODE_ID NODE_ADDRESS [DRAIN_SECONDS]"

[[ $# -eq 3 || $# -eq 4 ]] || koo_usage_error "expected three or four arguments, got $#"
operator=$1 node=$2 address=$3 drain_seconds=${4:-300}
koo_require_dns_name OPERATOR_ID "$operator"
koo_require_dns_name NODE_ID "$node"
koo_require_ipv4 NODE_ADDRESS "$address"
koo_require_drain_seconds "$drain_seconds"

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# Salt stops waiting a minute and a half after kubectl's own bound (the module's is a minute).
koo_salt "$work/drain" $((drain_seconds + 90)) "$operator" microk8s.drain_for_replacement "$address" "$drain_seconds"
result=$("${KOO_SALT_OUTPUT[@]}" drained "$operator" <"$work/drain.json")
case $result in
  drained\ *) echo "drained node ${result#drained } ($address) on $operator before its machine is deleted" ;;
  no-answer) echo "node $node ($address) not drained: $operator did not answer$(koo_salt_said "$work/drain"); its machine is deleted anyway" ;;
  *) echo "node $node ($address) not drained: ${result#error }; its machine is deleted anyway" ;;
esac
