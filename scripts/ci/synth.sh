#!/usr/bin/env bash
# The pipeline's synth job: cdktf.out/ for the cluster KUBE_ON_OS_DOMAIN names, checking and
# recording every TF_VAR_* the job sees (npm run synth hands them to the app).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KOO_ROOT"
ci_cluster
log "synth: cluster $KUBE_ON_OS_DOMAIN (TF_VAR_deploy_domain_name and state name)"
# The state is GitLab's (scripts/ci/tofu.sh sets TF_HTTP_* in the jobs that run tofu), so the stack
# declares the http backend even though this job has no TF_HTTP_ADDRESS.
KUBE_ON_OS_BACKEND=http npm run --silent synth
