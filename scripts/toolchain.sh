#!/usr/bin/env bash
# Installs the verification toolchain into the cache (see scripts/toolchain/lib.sh). Idempotent:
# the first run builds and downloads (several minutes), later runs take about a second.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/toolchain/lib.sh"

started=$SECONDS
for installer in terraform terraform-cli python cloud-init gitlab-ci-local lint-tools graphviz ssh-hosts; do
  bash "$KOO_ROOT/scripts/toolchain/$installer.sh"
done
log "toolchain ready in $((SECONDS - started)) s (cache: $KOO_CACHE)"
