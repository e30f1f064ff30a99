#!/usr/bin/env bash
# gitlab-ci-local runs .gitlab-ci.yml jobs locally. 4.74+ needs Node 22, so it is pinned to the
# last release that runs on Node 20, with GitLab's cache keys (below). It needs rsync to copy the
# work tree into its builds.
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

# Cache keys as GitLab makes them. For a `key:files` cache with a `prefix`, GitLab's key is the
# prefix and the files' digest (lib/gitlab/ci/pipeline/seed/build/cache.rb, key_from_files:
# `@key[:prefix] ||= @custom_key_prefix`); only a cache without a prefix is keyed by its place in
# the job's list. gitlab-ci-local puts that place in front of every prefix too
# (firecow/gitlab-ci-local#1772), so two jobs that list the same caches in another order never
# share them: the pipeline's test job ran npm ci again after the lint job had cached node_modules.
index="$dir/node_modules/gitlab-ci-local/dist/index.js"
# shellcheck disable=SC2016 # JavaScript template literals, not shell expansions
indexed='if(X)return`${z}_${R.expandText(X,u)}-`' as_gitlab='if(X)return`${R.expandText(X,u)}-`'
node -e '
  const fs = require("fs");
  const [file, from, to] = process.argv.slice(1);
  const text = fs.readFileSync(file, "utf8");
  if (text.split(from).length !== 2) process.exit(3);
  fs.writeFileSync(file, text.replace(from, () => to));
' "$index" "$indexed" "$as_gitlab" ||
  die "gitlab-ci-local $KOO_GCL_VERSION: its cache key code is not where expected in $index"
mark_complete "$dir"
