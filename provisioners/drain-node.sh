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
koo_is_dns_name "$operator" || koo_usage_error "OPERATOR_ID \"$operator\" is not a lower-case DNS name"
koo_is_dns_name "$node" || koo_usage_error "NODE_ID \"$node\" is not a lower-case DNS name"
koo_is_ipv4 "$address" || koo_usage_error "NODE_ADDRESS \"$address\" is not an IPv4 address"
{ koo_is_positive_int "$drain_seconds" && ((drain_seconds <= 3600)); } ||
  koo_usage_error "DRAIN_SECONDS \"$drain_seconds\" is not a whole number of seconds from 1 to 3600"

work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# Salt stops waiting a minute and a half after kubectl's own bound (the module's is a minute).
salt --out=json --static --timeout=$((drain_seconds + 90)) "$operator" microk8s.drain_for_replacement "$address" "$drain_seconds" \
  >"$work/drain.json" 2>"$work/drain.err" || true
result=$("${KOO_SALT_OUTPUT[@]}" drained "$operator" <"$work/drain.json")
case $result in
  drained\ *) echo "drained node ${result#drained } ($address) on $operator before its machine is deleted" ;;
  no-answer)
    reason=$(koo_first_line "$(cat "$work/drain.err")")
    echo "node $node ($address) not drained: $operator did not answer${reason:+ (salt: $reason)}; its machine is deleted anyway"
    ;;
  *) echo "node $node ($address) not drained: ${result#error }; its machine is deleted anyway" ;;
esac
