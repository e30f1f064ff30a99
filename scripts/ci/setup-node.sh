#!/usr/bin/env bash
# before_script of the jobs that run Node: `npm ci`, unless GitLab's cache restored node_modules
# for this very package-lock.json; then the OpenStack bindings (.gen/), which are regenerated only
# when their inputs changed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KOO_ROOT"
log "Node.js $(node --version)"

stamp=node_modules/.kube-on-os-package-lock.sha256
want=$(sha256sum package-lock.json | cut -d ' ' -f 1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  log "node_modules: restored from the cache for package-lock.json ${want:0:12}"
else
  log "node_modules: npm ci (package-lock.json ${want:0:12})"
  npm ci --no-audit --no-fund --prefer-offline
  echo "$want" >"$stamp"
fi
node scripts/generate-bindings.js
