#!/usr/bin/env bash
# The pipeline's lint job: scripts/lint.sh, the lint and type-check steps of `npm test`, first and
# on their own for fast feedback (STYLE.md rule 15).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KOO_ROOT"
# Only the linters' part of the toolchain: the Python venv and Debian's shellcheck.
ci_python
bash scripts/toolchain/python.sh
bash scripts/toolchain/lint-tools.sh
bash scripts/lint.sh
