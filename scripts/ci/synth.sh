#!/usr/bin/env bash
# The pipeline's synth job: cdktf.out/ for the cluster KUBE_ON_OS_DOMAIN names, checking and
# recording every TF_VAR_* the job sees (npm run synth hands them to the app).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KOO_ROOT"
ci_cluster
log "synth: cluster $KUBE_ON_OS_DOMAIN (TF_VAR_deploy_domain_name and state name)"
npm run --silent synth
