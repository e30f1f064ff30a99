#!/usr/bin/env bash
# Accepts the keys of exactly the expected minions on the Salt master, as root, as they arrive,
# then waits until every one of them answers test.ping. Each phase may take --timeout seconds.
#
# Keys are accepted one id at a time, never with --accept-all: a key from any other machine is
# reported and left pending for an operator. Each id may come as ID=MACHINE, the id of the
# machine (Nova server) that Terraform made for it: the script keeps, on the master, which machine
# each key it accepted belongs to (and each key accepted before, once its minion answers with it),
# and when Terraform has replaced that machine (-replace, a
# rebuilt node) it deletes the old machine's key and accepts the new one's (and deletes once the
# new one's that the master denied as the old one went: it comes back pending). Otherwise an expected
# id whose key was rejected, or denied (the same id came back with a different key), fails at
# once: only an operator can tell a rebuilt machine from an impostor.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="accept-minion-keys.sh [--timeout SECONDS] [--interval SECONDS] MINION_ID[=MACHINE_ID]..."

timeout=900
interval=5
ids=()
while (($#)); do
  case $1 in
    --timeout | --interval)
      [[ $# -ge 2 ]] || koo_usage_error "$1 needs a value"
      if [[ $1 == --timeout ]]; then timeout=$2; else interval=$2; fi
      shift 2
      ;;
    --timeout=*)
      timeout=${1#*=}
      shift
      ;;
    --interval=*)
      interval=${1#*=}
      shift
      ;;
    --)
      shift
      ids+=("$@")
      break
      ;;
    -*) koo_usage_error "unknown option $1" ;;
    *)
      ids+=("$1")
      shift
      ;;
  esac
done
koo_require_seconds --timeout "$timeout"
koo_require_seconds --interval "$interval"
[[ ${#ids[@]} -gt 0 ]] || koo_usage_error "no minion ids given"
declare -A seen=() machine=()
replaced=()
for i in "${!ids[@]}"; do
  id=${ids[$i]%%=*}
  if [[ ${ids[$i]} == *=* ]]; then
    machine[$id]=${ids[$i]#*=}
    [[ ${machine[$id]} =~ ^[A-Za-z0-9-]+$ ]] || koo_usage_error "machine id of $id must be letters, digits and dashes, got \"${machine[$id]}\""
  fi
  ids[i]=$id
  koo_require_dns_name "minion id" "$id"
  [[ -z ${seen[$id]:-} ]] || koo_usage_error "minion id $id is given twice"
  seen[$id]=1
done

host=$(koo_host)
work=$(mktemp -d)
trap 'rm -rf -- "$work"' EXIT

# fix_hint ID: the operator's way out for a key that only a person may trust.
fix_hint() {
  echo "if the machine is genuine, run 'salt-key -y --delete=$1' on $host, restart salt-minion on $1 and apply again"
}

# accept_key ID: accepts exactly ID; false when its key is no longer pending.
accept_key() {
  local id=$1 output accepted
  koo_salt_key accept "$id" output
  accepted=$(sed -n 's/^Key for minion \(.*\) accepted\.$/\1/p' <<<"$output")
  [[ -n $accepted ]] || return 1
  [[ $accepted == "$id" ]] || koo_die 1 "salt-key --accept=$id accepted other keys on $host: ${accepted//$'\n'/, }"
  [[ -z ${machine[$id]:-} ]] || koo_ledger_set "$id" "${machine[$id]}"
  echo "accepted minion key: $id"
}

# Keys of machines Terraform has replaced: the recorded machine is not the current one, so the key
# accepted for the id (and a denied one the new machine presented) belongs to a deleted machine.
# A pending key is already the new machine's (the old one's went with it, remove-node.sh).
declare -A was=()
for id in "${ids[@]}"; do
  known=$(koo_ledger_get "$id")
  [[ -z ${machine[$id]:-} || -z $known || $known == "${machine[$id]}" ]] || was[$id]=$known
done
if ((${#was[@]} > 0)); then
  koo_key_status "$work" "${ids[@]}" >"$work/status"
  while read -r status id; do
    [[ -n ${was[$id]:-} ]] || continue
    koo_ledger_set "$id"
    [[ $status == accepted || $status == denied ]] || continue
    koo_salt_key delete "$id"
    replaced+=("$id")
    echo "deleted the minion key of $id: its machine ${was[$id]} was replaced by ${machine[$id]}"
  done <"$work/status"
fi

# restart_replaced ID...: a minion that started while its key was denied runs the jobs it gets
# but returns nothing until it restarts (Salt's own advice: delete the key on the master and
# restart the minion; the rehearsal saw exactly this). The restart is published, not waited for:
# the minion cannot answer, and test.ping below shows when it is back.
restart_replaced() {
  local id
  for id in "$@"; do
    salt --async --list "$id" cmd.run_bg "salt-call --local service.restart salt-minion" >/dev/null 2>&1 || true
  done
}

# The deadline is per phase: keys first, then test.ping.
seconds_left() {
  echo $((deadline - SECONDS > 0 ? deadline - SECONDS : 0))
}

pause() {
  local left
  left=$(seconds_left)
  sleep $((interval < left ? interval : left))
}

declare -A reported=() redenied=()
deadline=$((SECONDS + timeout))
while :; do
  koo_key_status "$work" "${ids[@]}" >"$work/status"
  waiting=()
  while read -r status id; do
    case $status in
      denied)
        # The replaced machine's new minion may have asked while the old key was still accepted:
        # the master read that key, then wrote the new one to minions_denied, after the delete
        # above (salt/channel/server.py, _auth). That one key is deleted; the minion asks again
        # (rejected_retry) and its key is pending then. Any later denied key is a third machine's.
        if [[ " ${replaced[*]} " == *" $id "* && -z ${redenied[$id]:-} ]]; then
          redenied[$id]=1
          koo_salt_key delete "$id"
          echo "deleted the denied minion key of $id: its new machine presented it before the old one was deleted"
          waiting+=("$id")
          continue
        fi
        koo_die 1 "minion key of $id is denied: the minion presented a different key while its old one is accepted (a rebuilt machine?); $(fix_hint "$id")"
        ;;
      rejected) koo_die 1 "minion key of $id is rejected on $host; $(fix_hint "$id")" ;;
      accepted) ;;
      pending) accept_key "$id" || waiting+=("$id") ;;
      absent) waiting+=("$id") ;;
      unexpected)
        if [[ -z ${reported[$id]:-} ]]; then
          echo "unexpected minion key left pending: $id"
          reported[$id]=1
        fi
        ;;
    esac
  done <"$work/status"
  [[ ${#waiting[@]} -gt 0 ]] || break
  if ((SECONDS >= deadline)); then
    koo_die 1 "timed out after $timeout s waiting for minion keys: $(koo_join ", " "${waiting[@]}")"
  fi
  echo "waiting for ${#waiting[@]} of ${#ids[@]} minion keys: $(koo_join ", " "${waiting[@]}") ($(seconds_left) s left)"
  pause
done
echo "all ${#ids[@]} minion keys accepted"
if ((${#replaced[@]} > 0)); then
  restart_replaced "${replaced[@]}"
  echo "restarting salt-minion on $(koo_join ", " "${replaced[@]}"): a minion whose key was denied returns nothing until it restarts"
fi
restarted=$SECONDS

targets=$(koo_join , "${ids[@]}")
deadline=$((SECONDS + timeout))
while :; do
  asked=$SECONDS
  # test.ping through manage.status, which takes a gather_job_timeout of its own: a minion whose
  # key was just accepted is not connected until it authenticates again (every 10 s, Salt's
  # acceptance_wait_time), and a ping it misses lasts the timeout and then the wait for
  # saltutil.find_job answers, which with master.conf's 30 s made `salt test.ping` take 40 s.
  salt-run --out=json manage.status tgt="$targets" tgt_type=list timeout=10 gather_job_timeout=5 \
    >"$work/ping.json" 2>"$work/ping.err" || true
  up=$("${KOO_SALT_OUTPUT[@]}" up "${ids[@]}" <"$work/ping.json") || up=""
  silent=()
  koo_unlisted silent "$up" "${ids[@]}"
  [[ ${#silent[@]} -gt 0 ]] || break
  reason=$(koo_salt_said "$work/ping")
  if ((SECONDS >= deadline)); then
    koo_die 1 "timed out after $timeout s waiting for minions to answer test.ping: $(koo_join ", " "${silent[@]}")$reason"
  fi
  # A replaced machine's minion may have missed the first restart (not yet authenticated). It is
  # restarted again only when it missed a ping sent 30 s or more after its last restart: counting
  # from when a missed ping ended (15 s later; 40 s with salt and master.conf) would restart the
  # minion again too soon, before it ever got to answer (the rehearsal's replaced worker did so
  # until the deadline).
  again=()
  for id in "${silent[@]}"; do
    [[ " ${replaced[*]} " != *" $id "* ]] || again+=("$id")
  done
  if ((${#again[@]} > 0 && asked - restarted >= 30)); then
    restart_replaced "${again[@]}"
    restarted=$SECONDS
  fi
  echo "waiting for ${#silent[@]} of ${#ids[@]} minions to answer test.ping: $(koo_join ", " "${silent[@]}") ($(seconds_left) s left)"
  pause
done
echo "all ${#ids[@]} minions answer test.ping"

# Keys accepted before with no machine recorded (a cluster deployed before the record existed,
# or the Salt master's own key): each minion answered with its accepted key, so it runs on the
# machine Terraform names (one it replaced is gone by this step and answers nothing). Recorded
# now, a later replacement of that machine deletes the key.
adopted=()
for id in "${ids[@]}"; do
  [[ -n ${machine[$id]:-} && -z $(koo_ledger_get "$id") ]] || continue
  koo_ledger_set "$id" "${machine[$id]}"
  adopted+=("$id ${machine[$id]}")
done
if ((${#adopted[@]} > 0)); then
  echo "recorded the machine of each key accepted before: $(koo_join ", " "${adopted[@]}")"
fi
