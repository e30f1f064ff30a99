#!/usr/bin/env bash
# Runs `salt-run state.orchestrate SLS [pillar=PILLAR_JSON]` (default orch.deploy) on the Salt master, as root, and
# prints one line per minion job return while it runs, read from the master's event bus with
# `salt-run state.event`. Ends with one line: the summary, or every failing step and minion state.
#
# orch.deploy with no pillar given: when the apply only replaced machines (the Salt tree and the
# pillar, less each node's instance_id, as the last orch.deploy that succeeded ran with them, and
# the same minions, some on new machines by accept-minion-keys.sh's ledger), it passes
# orchestration:replaced, and orch.deploy highstates the new machines and the Kubernetes master
# only: every other minion already runs this tree with this pillar (docs/decisions.md).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="orchestrate.sh [SLS [PILLAR_JSON]]"

[[ $# -le 2 ]] || koo_usage_error "expected at most two arguments, got $#"
sls=${1:-orch.deploy}
[[ $sls =~ ^[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9_][A-Za-z0-9_-]*)*$ ]] || koo_usage_error "SLS must be an SLS name like orch.deploy, got \"$sls\""
# Pillar for this run only (salt-run state.orchestrate's pillar=, a JSON object).
pillar=()
if [[ $# -eq 2 ]]; then
  [[ $2 == "{"*"}" ]] || koo_usage_error "PILLAR_JSON must be a JSON object, got \"$2\""
  pillar=("pillar=$2")
fi
host=$(koo_host)
ready_timeout=${KOO_EVENT_READY_TIMEOUT:-30}
koo_require_seconds KOO_EVENT_READY_TIMEOUT "$ready_timeout"
restart_timeout=${KOO_MASTER_RESTART_TIMEOUT:-120}
koo_require_seconds KOO_MASTER_RESTART_TIMEOUT "$restart_timeout"

work=$(mktemp -d)
reader=""
stop_reader() {
  if [[ -n $reader ]]; then
    kill -TERM "$reader" 2>/dev/null || true
    wait "$reader" 2>/dev/null || true
    reader=""
  fi
}
cleanup() {
  stop_reader
  rm -rf -- "$work"
}
trap cleanup EXIT
# A signal ends the script through its EXIT trap, which stops the reader.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_for CONDITION_COMMAND TENTHS: polls ten times a second for TENTHS tenths of a second.
wait_for() {
  local tries=$2
  until "$1"; do
    ((tries-- > 0)) || return 1
    sleep 0.1
  done
}
is_ready() { [[ -e $work/ready ]]; }
reader_gone() { ! kill -0 "$reader" 2>/dev/null; }

# master_states JSON_FILE STDERR_FILE WHAT: sets master_states to "<states> <changed>" from a
# masterless state.apply salt_master; ends the script with WHAT and the failing states, or why
# there were no results at all.
master_states() {
  local reason
  if ! master_states=$("${KOO_SALT_OUTPUT[@]}" local-states <"$1" 2>"$work/master.parse"); then
    # Failing states (one per line after the counts), or why there were no results at all.
    reason=$(tail -n +2 <<<"$master_states" | paste -sd ';' -)
    [[ -n $reason ]] || reason="$(cat "$work/master.parse") $(koo_last_line "$(cat "$2")")"
    koo_die 1 "$3: $reason"
  fi
}

# run_orchestration SLS [PILLAR_ARGUMENT]: salt-run state.orchestrate SLS, with a line per minion
# job return while it runs; prints the summary when every step succeeded, and otherwise ends the
# script naming every failing step, minion and state.
run_orchestration() {
  local sls=$1 nonce ready_tag done_tag ready_deadline started status=0 elapsed summary summary_status=0 reason
  shift
  # The reader (supervise.py events) runs state.event and prints a line per minion job return.
  # Its own tags, unique to this run, mark when it is listening and when it has seen everything.
  nonce="$$-$RANDOM$RANDOM"
  ready_tag="kube-on-os/orchestrate/ready/$nonce"
  done_tag="kube-on-os/orchestrate/done/$nonce"
  rm -f -- "$work/ready"
  "${KOO_SUPERVISE[@]}" events --ready-tag "$ready_tag" --done-tag "$done_tag" --ready-file "$work/ready" -- \
    salt-run state.event pretty=False "tagmatch=(salt/job/[0-9]+/ret/.+|kube-on-os/orchestrate/(ready|done)/$nonce)" &
  reader=$!

  # An event sent before state.event has subscribed is lost, so the ready tag is repeated until the
  # reader has seen it.
  ready_deadline=$((SECONDS + ready_timeout))
  until is_ready; do
    if ((SECONDS >= ready_deadline)) || reader_gone; then
      koo_error "warning: no progress stream from salt-run state.event on $host after $ready_timeout s; orchestrating without per-host lines"
      stop_reader
      break
    fi
    salt-run event.send "$ready_tag" >/dev/null 2>&1 || true
    wait_for is_ready 5 || true
  done

  echo "orchestration $sls started on $host"
  started=$SECONDS
  salt-run state.orchestrate "$sls" "$@" --out=json >"$work/result.json" 2>"$work/stderr" || status=$?
  elapsed=$((SECONDS - started))

  # Every minion return is on the bus before the orchestration returns; the done tag comes after
  # them, so the reader has printed them all once it exits.
  if [[ -n $reader ]]; then
    salt-run event.send "$done_tag" >/dev/null 2>&1 || true
    wait_for reader_gone 100 || true
    stop_reader
  fi

  summary=$("${KOO_SALT_OUTPUT[@]}" orchestration "$sls" "$elapsed" "$work/result.json") || summary_status=$?
  case $summary_status in
    0)
      [[ $status -eq 0 ]] || koo_die 1 "orchestration $sls failed: salt-run exited $status although every step succeeded"
      echo "$summary"
      ;;
    1)
      koo_die 1 "$summary"
      ;;
    *)
      # No result at all: salt-run itself failed (master down, bad arguments); its stderr says why.
      sed 's/^/salt-run: /' "$work/stderr" | tail -n 20 >&2
      reason=$(koo_last_line "$(cat "$work/stderr")")
      koo_die 1 "orchestration $sls failed: salt-run exited $status without a result${reason:+: $reason}"
      ;;
  esac
}

# The Salt master's own configuration comes first, applied masterless. When it changes (a later
# version's: cloud-init writes this version's on a new Salt master), the salt_master state
# restarts salt-master, and a salt-run talking to the master at that moment dies with tornado's
# StreamClosedError.
#
# A minion that an earlier version configured may still run Salt 3007's default zmq_monitor: when
# its master restarts, it rebuilds its channels, and its main process can hang for good in
# pyzmq's Context.term (core/files/minion.conf). So before a change restarts the master, every
# minion takes this version's options from the master as it runs (orch.minions), and the master
# restarts only once each runs with them.
salt-call --local --retcode-passthrough --out=json state.apply salt_master test=True >"$work/master.json" 2>"$work/master.err" || true
master_states "$work/master.json" "$work/master.err" "checking the Salt master's configuration on $host failed"
read -r _ master_changes <<<"$master_states"
answering=()
if ((master_changes > 0)); then
  echo "the Salt master's configuration changes on $host: every minion takes its options before the master restarts"
  run_orchestration orch.minions
  # The minions the restarted master must hear again: every one that answers it now.
  koo_salt "$work/answering" 10 '*' test.ping
  mapfile -t answering < <("${KOO_SALT_OUTPUT[@]}" answered <"$work/answering.json")
fi
salt-call --local --retcode-passthrough --out=json state.apply salt_master >"$work/master.json" 2>"$work/master.err" || true
master_states "$work/master.json" "$work/master.err" "configuring the Salt master on $host failed"
read -r _ master_changed <<<"$master_states"
if ((master_changed > 0)); then
  # A restarted master answers once the minions have reconnected: every one that answered it
  # before (its own among them), or at least its own. The orchestration's first step needs them all.
  expected=("${answering[@]}")
  ((${#expected[@]} > 0)) || expected=("$(cat /etc/salt/minion_id 2>/dev/null || hostname -f)")
  silent=("${expected[@]}")
  deadline=$((SECONDS + restart_timeout))
  # salt fails while any minion is silent; what the others answered still counts (koo_salt).
  until koo_salt "$work/self" 10 --list "$(koo_join , "${silent[@]}")" test.ping &&
    koo_silent silent "$work/self.json" "${silent[@]}" && ((${#silent[@]} == 0)); do
    ((SECONDS < deadline)) ||
      koo_die 1 "the Salt master on $host restarted with its new configuration, and ${silent[*]} did not answer it for $restart_timeout s"
    sleep 2
  done
  answered_by="${#expected[@]} minions answer"
  ((${#expected[@]} > 1)) || answered_by="its minion answers"
  echo "Salt master configured on $host: $master_changed states changed; $answered_by it again"
fi

# tree_fingerprint: a digest of the installed Salt tree and pillar, each node's instance_id left
# out (a replaced machine changes it; only the master's cloud integration reads it, and it runs in
# every orch.deploy). Fails when either tree is missing.
tree_fingerprint() {
  [[ -d $KOO_SALT_ROOT && -f $KOO_PILLAR_ROOT/_from_terraform.sls ]] || return 1
  {
    (cd "$KOO_SALT_ROOT" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
    (cd "$KOO_PILLAR_ROOT" && find . -type f ! -path ./_from_terraform.sls -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
    grep -Ev '^[[:space:]-]*"?instance_id"?:' "$KOO_PILLAR_ROOT/_from_terraform.sls" | sha256sum
  } | sha256sum | cut -d ' ' -f 1
}

# replaced_minions ARRAY FINGERPRINT: sets ARRAY to the minions on machines replaced since the last
# orch.deploy that succeeded; fails when anything else changed since (or there is no record).
replaced_minions() {
  local -n replaced_minions_result=$1
  replaced_minions_result=()
  [[ -f $KOO_ORCHESTRATED && -f $KOO_MACHINE_LEDGER ]] || return 1
  [[ $(head -n 1 "$KOO_ORCHESTRATED") == "tree $2" ]] || return 1
  [[ $(tail -n +2 "$KOO_ORCHESTRATED" | cut -d ' ' -f 1 | LC_ALL=C sort) == $(cut -d ' ' -f 1 "$KOO_MACHINE_LEDGER" | LC_ALL=C sort) ]] ||
    return 1
  mapfile -t replaced_minions_result < <(
    awk 'NR == FNR { if (FNR > 1) was[$1] = $2; next } was[$1] != $2 { print $1 }' "$KOO_ORCHESTRATED" "$KOO_MACHINE_LEDGER" | LC_ALL=C sort
  )
  ((${#replaced_minions_result[@]} > 0))
}

fingerprint=""
if [[ $sls == orch.deploy && ${#pillar[@]} -eq 0 ]] && fingerprint=$(tree_fingerprint); then
  replaced=()
  if replaced_minions replaced "$fingerprint"; then
    printf -v listed '"%s",' "${replaced[@]}"
    pillar=("pillar={\"orchestration\": {\"replaced\": [${listed%,}]}}")
    echo "only machines replaced since the last orch.deploy, the Salt tree and the pillar as it left them: ${replaced[*]}"
  fi
fi

run_orchestration "$sls" "${pillar[@]}"
if [[ -n $fingerprint ]]; then
  {
    echo "tree $fingerprint"
    [[ ! -f $KOO_MACHINE_LEDGER ]] || cat "$KOO_MACHINE_LEDGER"
  } | koo_replace_file "$KOO_ORCHESTRATED"
fi
