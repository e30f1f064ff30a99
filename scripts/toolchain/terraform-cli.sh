#!/usr/bin/env bash
# Finds the Terraform CLI that the tests run beside OpenTofu. It is not installed here: Terraform
# from 1.6 on cannot be built from the Go module proxy (its go.mod replaces nested modules with
# local directories that the module zip leaves out), and no other download is reachable. The
# machine image has one; a machine without `terraform` >= the minimum runs the OpenTofu half only,
# and the Terraform half is reported as skipped.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

terraform=$(koo_terraform_binary)
if [[ -z $terraform ]]; then
  log "Terraform: no terraform >= $KOO_TERRAFORM_MIN_VERSION on PATH; the Terraform half of the tests will be skipped"
else
  log "Terraform: $terraform ($("$terraform" version 2>/dev/null | head -n 1))"
fi
