#!/usr/bin/env bash
# Removes a departed Kubernetes node (scale-down), as root on the Salt master: the Kubernetes
# master forgets it (microk8s.forget_node: its dqlite member and its Kubernetes node), then its
# minion key is deleted. Either may already be gone, so running it again is harmless.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="remove-node.sh MASTER_ID NODE_ID NODE_ADDRESS"

[[ $# -eq 3 ]] || koo_usage_error "expected three arguments, got $#"
master=$1 node=$2 address=$3
koo_is_dns_name "$master" || koo_usage_error "MASTER_ID \"$master\" is not a lower-case DNS name"
koo_is_dns_name "$node" || koo_usage_error "NODE_ID \"$node\" is not a lower-case DNS name"
koo_is_ipv4 "$address" || koo_usage_error "NODE_ADDRESS \"$address\" is not an IPv4 address"
[[ $master != "$node" ]] || koo_usage_error "NODE_ID $node is the Kubernetes master itself"

host=$(koo_host)
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# salt exits 0 even when the function raised; the return value tells (True, False or an error).
salt --out=json --static --timeout=30 "$master" microk8s.forget_node "$address" >"$work/forget.json" 2>"$work/forget.err" || true
result=$("${KOO_SALT_OUTPUT[@]}" forget-node "$master" <"$work/forget.json")
case $result in
  removed) echo "removed node $node ($address) from the microk8s cluster on $master" ;;
  absent) echo "node $node ($address) is not in the microk8s cluster on $master; nothing to remove" ;;
  no-answer)
    reason=$(koo_first_line "$(cat "$work/forget.err")")
    koo_die 1 "cannot remove node $node ($address): $master did not answer microk8s.forget_node${reason:+ (salt: $reason)}"
    ;;
  *) koo_die 1 "cannot remove node $node ($address): microk8s.forget_node on $master failed: ${result#error }" ;;
esac

# read_key_status: the node's key status (accepted, pending, rejected, denied or absent) into
# $key_status.
read_key_status() {
  salt-key --list=all --out=json >"$work/keys.json" 2>"$work/keys.err" ||
    koo_die 1 "salt-key --list=all failed on $host: $(koo_first_line "$(cat "$work/keys.err")")"
  "${KOO_SALT_OUTPUT[@]}" key-status "$node" <"$work/keys.json" >"$work/status" 2>/dev/null ||
    koo_die 1 "salt-key --list=all printed no key lists on $host: $(koo_first_line "$(cat "$work/keys.json")")"
  read -r key_status _ <"$work/status"
}

# The departed machine's record goes with its key (accept-minion-keys.sh keeps it).
koo_ledger_set "$node"
read_key_status
if [[ $key_status == absent ]]; then
  echo "minion key of $node is already absent on $host"
  exit 0
fi
output=$(salt-key -y --delete="$node" 2>&1) || koo_die 1 "salt-key --delete=$node failed on $host: $(koo_first_line "$output")"
read_key_status
[[ $key_status == absent ]] || koo_die 1 "salt-key --delete=$node left the key $key_status on $host"
echo "deleted minion key: $node"
