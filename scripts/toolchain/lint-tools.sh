#!/usr/bin/env bash
# Linters that come from Debian rather than npm or PyPI: shellcheck for scripts/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_command shellcheck shellcheck
