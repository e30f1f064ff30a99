#!/usr/bin/env bash
# gitlab-ci-local runs .gitlab-ci.yml jobs locally. 4.74+ needs Node 22, so it is pinned to the
# last release that runs on Node 20. It needs rsync to copy the work tree into its builds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

ensure_command rsync rsync

dir=$(koo_gcl_dir)
is_complete "$dir" && exit 0
need npm "install Node.js 20 with npm"
log "gitlab-ci-local $KOO_GCL_VERSION: installing from npm (once)"
fresh_dir "$dir"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "gitlab-ci-local@$KOO_GCL_VERSION" >/dev/null ||
  die "npm could not install gitlab-ci-local@$KOO_GCL_VERSION"
version=$("$dir/node_modules/.bin/gitlab-ci-local" --version 2>/dev/null || true)
[[ $version == "$KOO_GCL_VERSION" ]] || die "gitlab-ci-local reports version '$version', expected $KOO_GCL_VERSION"
mark_complete "$dir"
