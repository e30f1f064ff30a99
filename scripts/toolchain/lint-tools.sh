#!/usr/bin/env bash
# Linters that come from Debian rather than npm or PyPI: shellcheck for scripts/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if ! command -v shellcheck >/dev/null 2>&1; then
  need apt-get "install shellcheck with your package manager"
  log "shellcheck: installing Debian's package"
  run_apt install -y -qq shellcheck >/dev/null 2>&1 ||
    { run_apt update -qq >/dev/null 2>&1 && run_apt install -y -qq shellcheck >/dev/null; } ||
    die "could not install shellcheck with apt-get; install it by hand"
fi
