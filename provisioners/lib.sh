# shellcheck shell=bash
# Sourced by the provisioner scripts: one-line messages, and the argument checks and Salt calls they share.
# Terraform uploads this directory to $HOME/.kube-on-os/bin/ and runs each script with bash, so
# nothing here relies on the executable bit.

KOO_PROVISIONERS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KOO_SCRIPT="$(basename "${BASH_SOURCE[1]:-$0}")"
# The Python helpers run on the host's own python3 (3.12 on Ubuntu 24.04, 3.8 on an older 20.04
# image), never Salt's onedir one: salt_output.py reads Salt's JSON, supervise.py runs and stops the
# Salt processes a script watches.
# shellcheck disable=SC2034  # used by the scripts that source this file
KOO_SALT_OUTPUT=(python3 "$KOO_PROVISIONERS/salt_output.py")
# shellcheck disable=SC2034  # used by the scripts that source this file
KOO_SUPERVISE=(python3 "$KOO_PROVISIONERS/supervise.py")

# Errors go to stderr as one self-explanatory line; only usage errors name the script.
koo_error() {
  echo "$*" >&2
}

# koo_die CODE MESSAGE: exit 1 is a failure of the task, exit 2 a usage error.
koo_die() {
  local code=$1
  shift
  koo_error "$@"
  exit "$code"
}

koo_usage_error() {
  koo_error "$KOO_SCRIPT: $1"
  echo "usage: $KOO_USAGE" >&2
  exit 2
}

koo_is_positive_int() {
  [[ $1 =~ ^[1-9][0-9]{0,8}$ ]]
}

# Salt minion ids here are lower-case DNS names; that also keeps them free of the glob characters
# salt-key would expand and of the commas a Salt list target splits on.
koo_is_dns_name() {
  local name=$1 label
  [[ ${#name} -le 253 && $name =~ ^[a-z0-9.-]+$ && $name != *..* && $name != .* && $name != *. ]] || return 1
  local -a labels
  IFS=. read -r -a labels <<<"$name"
  for label in "${labels[@]}"; do
    [[ ${#label} -le 63 && $label =~ ^[a-z0-9]([a-z0-9-]*[a-z0-9])?$ ]] || return 1
  done
}

koo_is_ipv4() {
  local address=$1 octet
  [[ $address =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || return 1
  local -a octets
  IFS=. read -r -a octets <<<"$address"
  for octet in "${octets[@]}"; do
    [[ $octet =~ ^(0|[1-9][0-9]*)$ && $octet -le 255 ]] || return 1
  done
}

# koo_require_dns_name WHAT VALUE, koo_require_ipv4 WHAT VALUE, koo_require_seconds WHAT VALUE:
# a usage error naming WHAT unless VALUE is a minion id, an IPv4 address, a number of seconds.
koo_require_dns_name() {
  koo_is_dns_name "$2" || koo_usage_error "$1 \"$2\" is not a lower-case DNS name"
}

koo_require_ipv4() {
  koo_is_ipv4 "$2" || koo_usage_error "$1 \"$2\" is not an IPv4 address"
}

koo_require_seconds() {
  koo_is_positive_int "$2" || koo_usage_error "$1 must be a positive whole number of seconds, got \"$2\""
}

# koo_require_drain_seconds VALUE: how long kubectl may drain a node (drain-node.sh, remove-node.sh).
koo_require_drain_seconds() {
  { koo_is_positive_int "$1" && (($1 <= 3600)); } ||
    koo_usage_error "DRAIN_SECONDS \"$1\" is not a whole number of seconds from 1 to 3600"
}

# The name this machine is known by in messages: its FQDN, or its short name when that fails.
koo_host() {
  hostname -f 2>/dev/null || hostname
}

# koo_join SEPARATOR WORD...: the words joined by SEPARATOR.
koo_join() {
  local separator=$1 joined="" word
  shift
  for word in "$@"; do
    joined+=${joined:+$separator}$word
  done
  echo "$joined"
}

# koo_first_line TEXT: the first non-empty line, for one-line messages out of multi-line output.
koo_first_line() {
  local line
  while IFS= read -r line; do
    if [[ -n ${line//[[:space:]]/} ]]; then
      echo "$line"
      return
    fi
  done <<<"$1"
}

# koo_last_line TEXT: the last non-empty line, which is where a traceback names its error.
koo_last_line() {
  local line last=""
  while IFS= read -r line; do
    [[ -z ${line//[[:space:]]/} ]] || last=$line
  done <<<"$1"
  echo "$last"
}

# koo_salt OUT TIMEOUT ARG...: `salt --out=json --static --timeout=TIMEOUT ARG...`, its JSON into
# OUT.json and its stderr into OUT.err. Its exit status tells nothing the JSON does not: non-zero
# when a minion did not answer (the others' returns are there all the same), 0 when the function
# raised.
koo_salt() {
  local out=$1 timeout=$2
  shift 2
  salt --out=json --static --timeout="$timeout" "$@" >"$out.json" 2>"$out.err" || true
}

# koo_salt_said OUT [last]: " (salt: LINE)", LINE being the first non-empty line of OUT.err (with
# `last`, the last one: where a traceback names its error), or nothing when OUT.err has none.
koo_salt_said() {
  local said
  if [[ ${2:-} == last ]]; then
    said=$(koo_last_line "$(cat "$1.err")")
  else
    said=$(koo_first_line "$(cat "$1.err")")
  fi
  echo "${said:+ (salt: $said)}"
}

# koo_key_status DIR MINION_ID...: prints "<status> <id>" for each MINION_ID (denied, rejected,
# accepted, pending or absent), then "unexpected <id>" for every other pending key (salt_output.py
# key-status); salt-key's own output goes to DIR. Ends the script when salt-key fails or prints no
# key lists.
koo_key_status() {
  local dir=$1
  shift
  salt-key --list=all --out=json >"$dir/keys.json" 2>"$dir/keys.err" ||
    koo_die 1 "salt-key --list=all failed on $(koo_host): $(koo_first_line "$(cat "$dir/keys.err")")"
  "${KOO_SALT_OUTPUT[@]}" key-status "$@" <"$dir/keys.json" 2>/dev/null ||
    koo_die 1 "salt-key --list=all printed no key lists on $(koo_host): $(koo_first_line "$(cat "$dir/keys.json")")"
}

# koo_salt_key ACTION ID [VAR]: `salt-key -y --ACTION=ID` (accept, delete), what it printed into
# VAR; ends the script when salt-key fails.
koo_salt_key() {
  local koo_salt_key_output
  koo_salt_key_output=$(salt-key -y "--$1=$2" 2>&1) ||
    koo_die 1 "salt-key --$1=$2 failed on $(koo_host): $(koo_first_line "$koo_salt_key_output")"
  [[ -z ${3:-} ]] || printf -v "$3" '%s' "$koo_salt_key_output"
}

# koo_silent ARRAY JSON_FILE MINION_ID...: sets ARRAY to the given minions that did not return
# True in the JSON that `salt --out=json --static` wrote to JSON_FILE (no answer, False or an
# error). Fails, rather than reporting everyone as answered, when the JSON cannot be read.
koo_silent() {
  local answered
  answered=$("${KOO_SALT_OUTPUT[@]}" answered "${@:3}" <"$2") || return 1
  koo_unlisted "$1" "$answered" "${@:3}"
}

# koo_unlisted ARRAY LINES MINION_ID...: sets ARRAY to the given minions that are not a line of LINES.
koo_unlisted() {
  local -n koo_unlisted_result=$1
  local lines=$2 id
  shift 2
  koo_unlisted_result=()
  for id in "$@"; do
    grep -qxF -- "$id" <<<"$lines" || koo_unlisted_result+=("$id")
  done
}

# The Salt master's Salt tree and pillar, as install-salt-tree.sh installs them.
KOO_SALT_ROOT=${KOO_SALT_ROOT:-/srv/salt}
KOO_PILLAR_ROOT=${KOO_PILLAR_ROOT:-/srv/pillar}

# koo_replace_file FILE: writes its input to FILE, readable by root alone, in one rename: a reader
# finds the old content or the new, never part of it.
koo_replace_file() {
  local next
  next=$(mktemp "$1.XXXXXX")
  cat >"$next"
  chmod 0600 "$next"
  mv -f "$next" "$1"
}

# The machine ledger: "<minion id> <machine id>" for each key accept-minion-keys.sh accepted, on
# the master's PKI (the Salt volume), so that a key whose machine Terraform replaced is known.
KOO_MACHINE_LEDGER=${KOO_MACHINE_LEDGER:-/etc/salt/pki/master/kube-on-os-machines}

# What the last orch.deploy that succeeded ran with (orchestrate.sh): "tree <fingerprint of the
# Salt tree and pillar>", then the ledger as it was. Next to the ledger, on the Salt volume.
KOO_ORCHESTRATED=${KOO_ORCHESTRATED:-$(dirname "$KOO_MACHINE_LEDGER")/kube-on-os-orchestrated}

# koo_ledger_get ID: the machine whose key was accepted for ID, if one was recorded.
koo_ledger_get() {
  [[ -f $KOO_MACHINE_LEDGER ]] || return 0
  awk -v id="$1" '$1 == id { print $2 }' "$KOO_MACHINE_LEDGER"
}

# koo_ledger_set ID [MACHINE]: records (or, without MACHINE, forgets) the machine of ID's key.
koo_ledger_set() {
  [[ -n ${2:-} || -f $KOO_MACHINE_LEDGER ]] || return 0
  {
    [[ ! -f $KOO_MACHINE_LEDGER ]] || awk -v id="$1" '$1 != id' "$KOO_MACHINE_LEDGER"
    [[ -z ${2:-} ]] || echo "$1 $2"
  } | koo_replace_file "$KOO_MACHINE_LEDGER"
}
