#!/usr/bin/env bash
# gitlab-ci-local runs .gitlab-ci.yml jobs locally, patched to key caches and run after_script as
# GitLab does (below). Pinned at 4.73.0, the last release that runs on Node.js 20 (4.74 and later
# need 22): the local pipeline test, which runs it on the image's Node.js line, needs nothing a
# later release adds, and a move would have to find the code both patches replace again. It needs
# rsync to copy the work tree into its builds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

ensure_command rsync rsync

dir=$(koo_gcl_dir)
is_complete "$dir" && exit 0
need npm "install Node.js with npm"
log "gitlab-ci-local $KOO_GCL_VERSION: installing from npm (once)"
fresh_dir "$dir"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "gitlab-ci-local@$KOO_GCL_VERSION" >/dev/null ||
  die "npm could not install gitlab-ci-local@$KOO_GCL_VERSION"
version=$("$dir/node_modules/.bin/gitlab-ci-local" --version 2>/dev/null || true)
[[ $version == "$KOO_GCL_VERSION" ]] || die "gitlab-ci-local reports version '$version', expected $KOO_GCL_VERSION"

# Two patches, each to do as GitLab does; the install fails if either code is not where expected.
index="$dir/node_modules/gitlab-ci-local/dist/index.js"
patch() {
  local what=$1 from=$2 to=$3
  node -e '
    const fs = require("fs");
    const [file, from, to] = process.argv.slice(1);
    const text = fs.readFileSync(file, "utf8");
    if (text.split(from).length !== 2) process.exit(3);
    fs.writeFileSync(file, text.replace(from, () => to));
  ' "$index" "$from" "$to" ||
    die "gitlab-ci-local $KOO_GCL_VERSION: its $what code is not where expected in $index"
}

# Cache keys as GitLab makes them. For a `key:files` cache with a `prefix`, GitLab's key is the
# prefix and the files' digest (lib/gitlab/ci/pipeline/seed/build/cache.rb, key_from_files:
# `@key[:prefix] ||= @custom_key_prefix`); only a cache without a prefix is keyed by its place in
# the job's list. gitlab-ci-local puts that place in front of every prefix too
# (firecow/gitlab-ci-local#1772), so two jobs that list the same caches in another order never
# share them: the pipeline's test job ran npm ci again after the lint job had cached node_modules.
# shellcheck disable=SC2016 # JavaScript template literals, not shell expansions
patch "cache key" 'if(X)return`${z}_${R.expandText(X,u)}-`' 'if(X)return`${R.expandText(X,u)}-`'

# after_script in the job's working directory, as the runner runs it: what the script left there
# (a plan file, the state lock's note) is still there. With --shell-isolation gitlab-ci-local
# copies the work tree into the job's build again before the after_script (rsync --delete, in
# execScripts), deleting every file the script wrote; now only before the script.
# shellcheck disable=SC2016
patch "after_script" \
  'if(await z0.default.remove(`${$}/${Z}/artifacts/${B}`),!J&&this.argv.shellIsolation)await R.rsyncTrackedFiles($,Z,`${B}`);' \
  'if(F.length===0&&(await z0.default.remove(`${$}/${Z}/artifacts/${B}`),!J&&this.argv.shellIsolation))await R.rsyncTrackedFiles($,Z,`${B}`);'
mark_complete "$dir"
