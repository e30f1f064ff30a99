#!/usr/bin/env bash
# The pipeline's tofu: what GitLab's gitlab-tofu (the OpenTofu CI/CD component's wrapper) does,
# with its variable names, on the project's own tofu and offline provider mirror.
#
#   tofu.sh validate | plan | plan-json | salt-preview | apply | destroy-plan | destroy | release-lock
#
# salt-preview shows, after the plan, what the candidate Salt tree and pillar would change on each
# host the plan keeps (scripts/preview.js, through the bastion with KUBE_ON_OS_SSH_PRIVATE_KEY), and
# writes it to salt-preview.json beside the plan.
# plan and destroy-plan save a plan (plan.cache, destroy.cache) and a marker saying whether it
# changes anything; apply and destroy apply exactly that saved plan, which tofu refuses when the
# state moved on since. release-lock is the jobs' after_script (scripts/ci/state-lock.sh).
#
# GitLab-managed state comes through TF_HTTP_* alone, each defaulting as in gitlab-tofu:
# TF_HTTP_ADDRESS=$CI_API_V4_URL/projects/$CI_PROJECT_ID/terraform/state/<state name, URL-encoded>
# (or $GITLAB_TOFU_STATE_ADDRESS), lock and unlock at <TF_HTTP_ADDRESS>/lock with POST and DELETE,
# user gitlab-ci-token, password $CI_JOB_TOKEN.
#
# Unlike gitlab-tofu's, the root directory and the plan files are fixed: cdktf synthesizes the
# stack into cdktf.out/stacks/kube-on-os (main.ts), and .gitlab-ci.yml's artifacts name those
# paths. GITLAB_TOFU_ROOT_DIR, GITLAB_TOFU_PLAN_CACHE and GITLAB_TOFU_PLAN_JSON are refused when
# they say anything else, rather than silently leaving the artifacts behind. Never -backend-config: tofu writes those values into
# the plan file, and the token would outlive the job in the plan.cache artifact.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/state-lock.sh"
cd "$KOO_ROOT"

command=${1:-}
case $command in
  validate | plan | plan-json | salt-preview | apply | destroy-plan | destroy | release-lock) ;;
  *) ci_die "usage: scripts/ci/tofu.sh validate|plan|plan-json|salt-preview|apply|destroy-plan|destroy|release-lock (got '${command}')" ;;
esac

root=cdktf.out/stacks/kube-on-os
plan_cache=plan.cache
plan_json=plan.json
salt_preview=salt-preview.json
destroy_cache=destroy.cache
destroy_json=destroy.json
for fixed in "GITLAB_TOFU_ROOT_DIR=$root" "GITLAB_TOFU_PLAN_CACHE=$plan_cache" "GITLAB_TOFU_PLAN_JSON=$plan_json"; do
  name=${fixed%%=*} value=${fixed#*=}
  [[ -z ${!name:-} || ${!name} == "$value" || ${!name} == "$KOO_ROOT/$root/$value" || ${!name} == "$KOO_ROOT/$value" ]] ||
    ci_die "$name='${!name}' cannot be changed here: the stack and its plan files are at $root/$plan_cache and $root/$plan_json (the artifacts name them); unset $name"
done
[[ -f $root/cdk.tf.json ]] || ci_die "$root/cdk.tf.json is missing: the synth job's cdktf.out/ artifact did not arrive"

# jq's @uri, as gitlab-tofu encodes the state name: unreserved characters stay, the rest is %XX
# (ASCII is enough: synth accepts only a DNS name for the domain).
urlencode() {
  local string=$1 encoded="" char i
  for ((i = 0; i < ${#string}; i++)); do
    char=${string:i:1}
    case $char in
      [A-Za-z0-9._~-]) encoded+=$char ;;
      *) encoded+=$(printf '%%%02X' "'$char") ;;
    esac
  done
  printf '%s' "$encoded"
}

backend_env() {
  ci_cluster
  if [[ -z ${TF_HTTP_ADDRESS:-} && -z ${GITLAB_TOFU_STATE_ADDRESS:-} ]]; then
    local missing=() name
    for name in CI_API_V4_URL CI_PROJECT_ID; do [[ -n ${!name:-} ]] || missing+=("$name"); done
    ((${#missing[@]} == 0)) || ci_die "GitLab-managed state needs ${missing[*]} (GitLab sets them in every job)"
  fi
  [[ -n ${TF_HTTP_PASSWORD:-} || -n ${CI_JOB_TOKEN:-} ]] ||
    ci_die "GitLab-managed state needs CI_JOB_TOKEN (GitLab sets it in every job) or TF_HTTP_PASSWORD"
  local address=${GITLAB_TOFU_STATE_ADDRESS:-${CI_API_V4_URL:-}/projects/${CI_PROJECT_ID:-}/terraform/state/$(urlencode "$GITLAB_TOFU_STATE_NAME")}
  export TF_HTTP_ADDRESS=${TF_HTTP_ADDRESS:-$address}
  # From the address in use, a user's own included, as gitlab-tofu derives them.
  export TF_HTTP_LOCK_ADDRESS=${TF_HTTP_LOCK_ADDRESS:-$TF_HTTP_ADDRESS/lock}
  export TF_HTTP_LOCK_METHOD=${TF_HTTP_LOCK_METHOD:-POST}
  export TF_HTTP_UNLOCK_ADDRESS=${TF_HTTP_UNLOCK_ADDRESS:-$TF_HTTP_ADDRESS/lock}
  export TF_HTTP_UNLOCK_METHOD=${TF_HTTP_UNLOCK_METHOD:-DELETE}
  export TF_HTTP_USERNAME=${TF_HTTP_USERNAME:-gitlab-ci-token}
  export TF_HTTP_PASSWORD=${TF_HTTP_PASSWORD:-${CI_JOB_TOKEN:-}}
  export TF_HTTP_RETRY_WAIT_MIN=${TF_HTTP_RETRY_WAIT_MIN:-5}
  log "state: $GITLAB_TOFU_STATE_NAME at $TF_HTTP_ADDRESS (lock $TF_HTTP_LOCK_ADDRESS, user $TF_HTTP_USERNAME)"
}

# The provider reads OpenStack credentials from the environment only; say which are missing
# before tofu fails on its first API call.
openstack_env() {
  [[ -n ${OS_CLOUD:-} || -n ${OS_AUTH_URL:-} ]] ||
    ci_die "no OpenStack credentials: set OS_CLOUD with a clouds.yaml file variable OS_CLIENT_CONFIG_FILE, or OS_AUTH_URL with OS_USERNAME/OS_PASSWORD or OS_APPLICATION_CREDENTIAL_ID/_SECRET (CI/CD variables)"
}

# ssh-agent -k only signals the agent: the job ends once the agent has (up to 5 s), so that no
# later job of the runner meets it, even on a machine too busy to run it at once.
stop_ssh_agent() {
  local pid=${SSH_AGENT_PID:-} tries=50
  [[ -n $pid ]] || return 0
  ssh-agent -k >/dev/null 2>&1 || true
  # Gone, or a zombie its parent has not reaped yet: /proc/PID/stat's state after the name.
  while [[ -r /proc/$pid/stat && $(cut -d')' -f2 "/proc/$pid/stat" 2>/dev/null) != " Z"* ]] && ((tries-- > 0)); do
    sleep 0.1
  done
}

# The provisioning chain logs in through ssh-agent. KUBE_ON_OS_SSH_PRIVATE_KEY, a file variable,
# is loaded into an agent of this job's own, which ends with the job.
ssh_agent() {
  [[ -n ${KUBE_ON_OS_SSH_PRIVATE_KEY:-} ]] || return 0
  [[ -f $KUBE_ON_OS_SSH_PRIVATE_KEY ]] || ci_die "KUBE_ON_OS_SSH_PRIVATE_KEY must be a file variable (its value is the key's path)"
  need ssh-agent "install an OpenSSH client (Debian: apt-get install openssh-client)"
  eval "$(ssh-agent -s)" >/dev/null
  trap stop_ssh_agent EXIT
  # A file variable may lack the final newline OpenSSH requires.
  ssh-add - <<<"$(cat "$KUBE_ON_OS_SSH_PRIVATE_KEY")" 2>/dev/null || ci_die "ssh-add refused KUBE_ON_OS_SSH_PRIVATE_KEY (not an unencrypted OpenSSH private key?)"
  log "ssh-agent: $(ssh-add -l | awk '{ print $2 }') loaded for the provisioning chain (agent pid $SSH_AGENT_PID, ends with this job)"
}

init() {
  tofu -chdir="$root" init -input=false -reconfigure "$@" >&2
}

# Developers may read but not lock GitLab-managed state (GitLab's state docs; gitlab-tofu).
developer_plan() {
  [[ ${GITLAB_TOFU_ALLOW_DEVELOPER_ROLE:-false} == true ]]
}

# save_plan FILE [ARGS]: `tofu plan -detailed-exitcode -out=FILE`, and FILE.changes saying
# whether the plan changes anything ("true") or not ("false"), for the job that applies it; the
# same word in $changes.
save_plan() {
  local file=$1 status=0
  shift
  rm -f "$root/$file" "$root/$file.changes"
  tofu -chdir="$root" plan -input=false -detailed-exitcode -out="$file" "$@" || status=$?
  case $status in
    0) changes=false ;;
    2) changes=true ;;
    *) exit "$status" ;;
  esac
  echo "$changes" >"$root/$file.changes"
}

# summary PLAN JSON: GitLab's terraform report of a saved plan.
summary() {
  [[ -f $root/$1 ]] || ci_die "$root/$1 is missing: run 'tofu.sh ${1%.cache}' first"
  tofu -chdir="$root" show -json "$1" | node scripts/ci/plan-summary.js >"$root/$2"
}

# apply_saved FILE JOB EMPTY: applies FILE from JOB's artifacts, exactly that plan (tofu refuses
# it when the state moved on since), holding the lock; when the plan changes nothing, says EMPTY
# and touches nothing.
apply_saved() {
  local file=$1 job=$2 empty=$3
  [[ -f $root/$file && -f $root/$file.changes ]] ||
    ci_die "$root/$file is missing: the $job job's artifact did not arrive; run the $job job again"
  if [[ $(cat "$root/$file.changes") != true ]]; then
    log "$empty"
    return 0
  fi
  backend_env
  openstack_env
  ssh_agent
  init
  state_lock_note
  tofu -chdir="$root" apply -input=false -auto-approve "$file"
}

# The after_script of the jobs that lock: needs no toolchain, only curl and the job's variables.
if [[ $command == release-lock ]]; then
  # tofu gives its lock back before it exits, and exits non-zero when it cannot.
  if [[ ${CI_JOB_STATUS:-} == success ]]; then
    log "state lock: the job succeeded, so its tofu gave the lock back"
    exit 0
  fi
  if ! (backend_env) >/dev/null 2>&1; then
    log "state lock: no GitLab-managed state in this job; nothing to give back"
    exit 0
  fi
  backend_env 2>/dev/null
  developer_plan || state_lock_release
  exit 0
fi

ci_go
bash scripts/toolchain/terraform.sh
source scripts/toolchain/env.sh
ci_provider_config
export TF_IN_AUTOMATION=true

case $command in
  validate)
    init -backend=false
    tofu -chdir="$root" validate
    ;;
  plan)
    backend_env
    openstack_env
    init
    # What the project already uses of its quotas, and what this cluster holds: the plan compares
    # the cluster's needs with what is free (scripts/quota-usage.js; nothing when unreadable).
    usage=$(node scripts/quota-usage.js --initialised "$root" "$(command -v tofu)")
    [[ -z $usage ]] || export TF_VAR_quota_usage=$usage
    plan_args=()
    if developer_plan; then plan_args+=(-lock=false); else state_lock_note; fi
    save_plan "$plan_cache" "${plan_args[@]}"
    if [[ $changes == false ]]; then
      log "plan: no changes; this pipeline has nothing to apply, and its apply job, if started, does nothing"
    fi
    ;;
  plan-json)
    summary "$plan_cache" "$plan_json"
    log "plan.json: $(cat "$root/$plan_json")"
    ;;
  salt-preview)
    [[ -f $root/$plan_cache ]] || ci_die "$root/$plan_cache is missing: run 'tofu.sh plan' first"
    if [[ -z ${KUBE_ON_OS_SSH_PRIVATE_KEY:-} ]]; then
      # A protected variable, which a pipeline of an unprotected branch does not get.
      why="no KUBE_ON_OS_SSH_PRIVATE_KEY in this job (a protected variable?), so no Salt preview"
      log "salt preview: $why"
      printf '{\n  "status": "skipped",\n  "reason": "%s",\n  "hosts": {}\n}\n' "$why" >"$root/$salt_preview"
      exit 0
    fi
    ssh_agent
    # KUBE_ON_OS_SALT_PREVIEW=warn makes an unreachable Salt master a warning, =off skips it.
    tofu -chdir="$root" show -json "$plan_cache" |
      node scripts/preview.js --plan - --stack "$root" --report "$root/$salt_preview"
    ;;
  apply)
    apply_saved "$plan_cache" plan "apply: the plan job's plan changes nothing; nothing to apply (the state is not touched)"
    ;;
  destroy-plan)
    backend_env
    openstack_env
    init
    state_lock_note
    save_plan "$destroy_cache" -destroy
    summary "$destroy_cache" "$destroy_json"
    if [[ $changes == false ]]; then
      log "destroy plan: nothing to destroy; the destroy job, if started, does nothing"
    else
      log "destroy plan: $(cat "$root/$destroy_json"); read the plan above, then start the destroy job, which destroys exactly this"
    fi
    ;;
  destroy)
    apply_saved "$destroy_cache" destroy-plan "destroy: the destroy-plan job's plan destroys nothing; nothing to do"
    ;;
esac
