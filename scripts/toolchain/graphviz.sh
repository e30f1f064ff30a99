#!/usr/bin/env bash
# Graphviz (`dot`, `tred`) from Debian, for `npm run graph` (docs/graph.svg). Debian's build is
# used as it is: the SVG only has to come out the same on the project's machines, which all run
# the same release.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_command dot graphviz
ensure_command tred graphviz
