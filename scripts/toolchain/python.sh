#!/usr/bin/env bash
# A venv with the pinned Salt, pytest and linters (requirements.txt), for the Salt tests.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

need python3 "install Python 3.10 or newer (Debian: apt-get install python3 python3-venv)"
python3 -c 'import venv, ensurepip' 2>/dev/null ||
  die "python3 cannot create virtual environments; install its venv module (Debian: apt-get install python3-venv)"

venv=$(koo_venv_dir)
is_complete "$venv" && exit 0

log "Python venv: installing $(grep -cE '^[a-z]' "$KOO_REQUIREMENTS") pinned packages into $venv (once)"
fresh_dir "$venv"
python3 -m venv "$venv"
# --no-compile: pip would compile every module of every package (14 of its 40 s of CPU here), and
# a run imports a fraction of Salt's; Python compiles and keeps the bytecode of what it imports.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile --cache-dir "$KOO_CACHE/pip-cache" \
  --requirement "$KOO_REQUIREMENTS" || die "pip could not install scripts/toolchain/requirements.txt (see above)"
mark_complete "$venv"
