# shellcheck shell=bash
# GitLab's state lock, as the pipeline's tofu jobs see it: who holds it, and giving back the one a
# job's tofu left behind. Sourced by scripts/ci/tofu.sh after backend_env (TF_HTTP_* set).
#
# GitLab keeps three things of a lock: the ID tofu chose, the user whose token took it and when
# (lib/api/terraform/state.rb, app/services/terraform/remote_state_handler.rb). No API reads a
# lock: a POST to the lock address is the only way to learn it. When the state is locked, GitLab
# answers 409 with the holder's ID, Who (the GitLab username) and Created; when it is free, the
# POST takes the lock, which this gives back at once with its own ID.
#
# curl speaks to GitLab as tofu's http backend does: the same addresses, methods and user, the
# system's certificate authorities and proxies, and TF_HTTP_SKIP_CERT_VERIFICATION,
# TF_HTTP_CLIENT_CA_CERTIFICATE_PEM, TF_HTTP_CLIENT_CERTIFICATE_PEM and
# TF_HTTP_CLIENT_PRIVATE_KEY_PEM. The password goes through a config file of mode 0600, never
# through curl's command line, where `ps` would show it.

# The file tofu.sh writes before tofu runs: the lock's ID at that moment (empty when free) and
# the GitLab user the job runs as. Not an artifact: it stays in the job's own directory for its
# after_script.
state_lock_record() {
  # shellcheck disable=SC2154 # root: the stack's directory, set by tofu.sh
  printf '%s/.state-lock-before' "$root"
}

# state_lock_curl METHOD URL BODY: prints the answer's body, then a line with its HTTP status.
state_lock_curl() {
  local method=$1 url=$2 body=$3 dir status
  dir=$(mktemp -d "${TMPDIR:-/tmp}/kube-on-os-lock-XXXXXX")
  (
    umask 077
    local user="${TF_HTTP_USERNAME:-}:${TF_HTTP_PASSWORD:-}"
    user=${user//\\/\\\\}
    printf 'user = "%s"\n' "${user//\"/\\\"}" >"$dir/config"
    [[ ${TF_HTTP_SKIP_CERT_VERIFICATION:-false} != true ]] || printf 'insecure\n' >>"$dir/config"
    if [[ -n ${TF_HTTP_CLIENT_CA_CERTIFICATE_PEM:-} ]]; then
      printf '%s\n' "$TF_HTTP_CLIENT_CA_CERTIFICATE_PEM" >"$dir/ca.pem"
      printf 'cacert = "%s"\n' "$dir/ca.pem" >>"$dir/config"
    fi
    if [[ -n ${TF_HTTP_CLIENT_CERTIFICATE_PEM:-} && -n ${TF_HTTP_CLIENT_PRIVATE_KEY_PEM:-} ]]; then
      printf '%s\n' "$TF_HTTP_CLIENT_CERTIFICATE_PEM" >"$dir/cert.pem"
      printf '%s\n' "$TF_HTTP_CLIENT_PRIVATE_KEY_PEM" >"$dir/key.pem"
      printf 'cert = "%s"\nkey = "%s"\n' "$dir/cert.pem" "$dir/key.pem" >>"$dir/config"
    fi
  )
  status=0
  curl -sS --max-time 30 --config "$dir/config" -X "$method" -H "Content-Type: application/json" \
    --data-binary "$body" -w '\n%{http_code}\n' "$url" || status=$?
  rm -rf "$dir"
  return "$status"
}

# state_lock_unlock ID: releases the lock ID through the unlock address; fails unless GitLab says
# 200 (it answers 409 when the lock is another's, or gone).
state_lock_unlock() {
  local answer
  answer=$(state_lock_curl "${TF_HTTP_UNLOCK_METHOD:-DELETE}" "$TF_HTTP_UNLOCK_ADDRESS" "{\"ID\":\"$1\"}") || answer=$'\n000'
  state_lock_status=${answer##*$'\n'}
  [[ $state_lock_status == 200 ]]
}

# state_lock_holder: prints the holder's LockInfo JSON when the state is locked, nothing when it
# is free; fails (with a line on stderr) when GitLab answers anything else.
state_lock_holder() {
  local id answer status body created
  id=$(cat /proc/sys/kernel/random/uuid)
  created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  # LockInfo as tofu sends it (GitLab requires every field).
  answer=$(state_lock_curl "${TF_HTTP_LOCK_METHOD:-POST}" "$TF_HTTP_LOCK_ADDRESS" \
    "{\"ID\":\"$id\",\"Operation\":\"OperationTypeInvalid\",\"Info\":\"kube-on-os: who holds the lock? (job ${CI_JOB_ID:-local})\",\"Who\":\"kube-on-os\",\"Version\":\"\",\"Created\":\"$created\",\"Path\":\"\"}") || return 1
  status=${answer##*$'\n'}
  body=${answer%$'\n'*}
  case $status in
    200)
      # It was free, and this took it: give it back, with its own ID.
      state_lock_unlock "$id" || {
        printf 'kube-on-os ci: state lock: could not give back the lock %s taken to read it (HTTP %s)\n' "$id" "$state_lock_status" >&2
        return 1
      }
      ;;
    409 | 423) printf '%s\n' "$body" ;;
    *)
      printf 'kube-on-os ci: state lock: %s %s answered HTTP %s\n' "${TF_HTTP_LOCK_METHOD:-POST}" "$TF_HTTP_LOCK_ADDRESS" "$status" >&2
      return 1
      ;;
  esac
}

# state_lock_field JSON NAME: one string field of a LockInfo.
state_lock_field() {
  node -e '
    let value;
    try { value = JSON.parse(process.argv[1])[process.argv[2]]; } catch { value = undefined; }
    process.stdout.write(value == null ? "" : String(value));' "$1" "$2"
}

# Before tofu runs: note the lock as it is (tofu fails on a lock held, and that one is not this
# job's to give back), and who this job is. A lock that could not be read is noted as such: then
# no lock is this job's to give back.
state_lock_note() {
  local holder before
  if holder=$(state_lock_holder); then
    before=$([[ -z $holder ]] || state_lock_field "$holder" ID)
  else
    before="<unread>"
  fi
  printf 'before=%s\nuser=%s\n' "$before" "${GITLAB_USER_LOGIN:-}" >"$(state_lock_record)"
}

# after_script: give back the lock this job's tofu left behind (cancelled, timed out, killed), and
# only that one. It is this job's when it was taken after the note above (a different ID) by the
# job's own GitLab user; the resource group keeps every other job of this cluster out meanwhile.
# Any other lock is named and left alone; docs/gitlab-ci.md#a-lock-left-behind says what to do.
state_lock_release() {
  local record before="" user="" holder id who created
  record=$(state_lock_record)
  if [[ ! -f $record ]]; then
    log "state lock: tofu did not run in this job; no lock of its own to give back"
    return 0
  fi
  before=$(sed -n 's/^before=//p' "$record")
  user=$(sed -n 's/^user=//p' "$record")
  holder=$(state_lock_holder) || {
    log "state lock: could not read it; if a later job says the state is locked, see docs/gitlab-ci.md#a-lock-left-behind"
    return 0
  }
  if [[ -z $holder ]]; then
    log "state lock: free; this job left none behind"
    return 0
  fi
  id=$(state_lock_field "$holder" ID)
  who=$(state_lock_field "$holder" Who)
  created=$(state_lock_field "$holder" Created)
  if [[ $before == "<unread>" || -z $id ]]; then
    log "state lock: held by ${who:-someone} since ${created:-an unknown time}; who held it before this job's tofu ran is unknown, so it is left alone (docs/gitlab-ci.md#a-lock-left-behind)"
  elif [[ $id == "$before" ]]; then
    log "state lock: $id, held by $who since $created, was there before this job's tofu ran; not this job's, left alone (docs/gitlab-ci.md#a-lock-left-behind)"
  elif [[ -z $user || $who != "$user" ]]; then
    log "state lock: $id is held by $who since $created, not by this job's user ${user:-(unknown)}; left alone (docs/gitlab-ci.md#a-lock-left-behind)"
  else
    if state_lock_unlock "$id"; then
      log "state lock: gave back $id, which this job's tofu took at $created and left behind"
    else
      log "state lock: could not give back $id (HTTP $state_lock_status); see docs/gitlab-ci.md#a-lock-left-behind"
    fi
  fi
}
