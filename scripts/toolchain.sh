#!/usr/bin/env bash
# Installs the verification toolchain into the cache (see scripts/toolchain/lib.sh). Idempotent:
# the first run builds and downloads (several minutes), later runs take about a second.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/toolchain/paths.sh"

started=$SECONDS
for installer in terraform python cloud-init gitlab-ci-local lint-tools graphviz ssh-hosts; do
  bash "$KOO_ROOT/scripts/toolchain/$installer.sh"
done
# Terraform is not installed (it cannot be built from the Go module proxy; see koo_terraform_binary):
# the tests run the one on PATH beside tofu, or skip its half.
terraform=$(koo_terraform_binary)
log "toolchain ready in $((SECONDS - started)) s (cache: $KOO_CACHE; terraform: ${terraform:-none >= $KOO_TERRAFORM_MIN_VERSION on PATH, its tests are skipped})"
