#!/usr/bin/env bash
# Sets root's console password on the given minions, as root on the Salt master, from what
# Terraform wrote to SECRET_FILE: `plaintext` and the ephemeral root_password on the next line, or
# `hash` and root_password_hash (the machines' cloud-init set it at their creation only); a file
# without either line is a plaintext, as the chain's steps wrote it before. Only a crypt hash
# leaves this script, to Salt's shadow.set_password: the plaintext's SHA-512 crypt, or the hash as
# given. SECRET_FILE is removed whatever happens, and never shown. An empty SECRET_FILE means the
# password is not managed: nothing is done.
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
  koo_require_dns_name "minion id" "$id"
done
[[ -s $secret ]] || exit 0

host=$(koo_host)
work=$(mktemp -d)
case $(head -n 1 -- "$secret") in
  plaintext)
    hash=$(tail -n +2 -- "$secret" | openssl passwd -6 -stdin) || koo_die 1 "root password: openssl could not hash it on $host"
    ;;
  hash)
    hash=$(tail -n +2 -- "$secret")
    # config/rules.ts, CRYPT_HASH: root_password_hash's rule.
    [[ $hash =~ ^[$](5|6|y|2b)[$][^[:space:]]+$ ]] ||
      koo_die 1 "root password: the hash is not a crypt(3) SHA-512, SHA-256, yescrypt or bcrypt hash"
    ;;
  # The chain's steps before the hash reached Salt wrote the plaintext alone (the upgrade tests
  # run such steps with today's scripts).
  *) hash=$(openssl passwd -6 -stdin <"$secret") || koo_die 1 "root password: openssl could not hash it on $host" ;;
esac
rm -f -- "$secret"

koo_salt "$work/set" 60 --list "$(koo_join , "${ids[@]}")" shadow.set_password root "$hash"
failed=()
koo_silent failed "$work/set.json" "${ids[@]}"
((${#failed[@]} == 0)) || koo_die 1 "root password: not set on $(koo_join ", " "${failed[@]}")$(koo_salt_said "$work/set")"
echo "root password: set on ${#ids[@]} machines"
