#!/usr/bin/env bash
# Sets root's console password on the given minions, as root on the Salt master, from the
# plaintext that Terraform wrote to SECRET_FILE (the ephemeral root_password). Only a SHA-512
# crypt hash of it leaves this script, to Salt's shadow.set_password; SECRET_FILE is removed
# whatever happens. An empty SECRET_FILE means the password is not managed: nothing is done.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="set-root-password.sh SECRET_FILE MINION_ID..."

[[ $# -ge 2 ]] || koo_usage_error "expected a secret file and at least one minion id, got $# arguments"
secret=$1
shift
ids=("$@")
work=""
trap 'rm -f -- "$secret"; [[ -z $work ]] || rm -rf -- "$work"' EXIT
[[ -f $secret ]] || koo_usage_error "SECRET_FILE $secret does not exist"
for id in "${ids[@]}"; do
  koo_is_dns_name "$id" || koo_usage_error "minion id \"$id\" is not a lower-case DNS name"
done
[[ -s $secret ]] || exit 0

host=$(koo_host)
work=$(mktemp -d)
hash=$(openssl passwd -6 -stdin <"$secret") || koo_die 1 "root password: openssl could not hash it on $host"
rm -f -- "$secret"

# salt exits non-zero when a minion does not answer; its JSON still holds those that did.
salt --out=json --static --timeout=60 --list "$(koo_join , "${ids[@]}")" shadow.set_password root "$hash" \
  >"$work/set.json" 2>"$work/set.err" || true
failed=()
koo_silent failed "$work/set.json" "${ids[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  reason=$(koo_first_line "$(cat "$work/set.err")")
  koo_die 1 "root password: not set on $(koo_join ", " "${failed[@]}")${reason:+ (salt: $reason)}"
fi
echo "root password: set on ${#ids[@]} machines"
