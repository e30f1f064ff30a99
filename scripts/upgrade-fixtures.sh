#!/usr/bin/env bash
# Regenerates the upgrade matrix's fixtures: the stack exactly as each earlier commit synthesized
# it, made by that commit's own code.
#
#   bash scripts/upgrade-fixtures.sh [--assets] COMMIT...
#
# For each commit: its tree (git archive, no work tree touched), `npm ci` (which generates its
# provider bindings), `npm run synth` with no TF_VAR_ and no KUBE_ON_OS_ setting, as a new user
# on a laptop would, then cdktf.out/stacks/kube-on-os/cdk.tf.json copied byte for byte to
# __tests__/fixtures/upgrade/<commit>.json (the abbreviated id git prints, 7 characters), and
# the commit listed in __tests__/fixtures/upgrade/versions.txt with its date, oldest first. The
# local backend's path, which cdktf writes as the absolute path of the checkout, is written as
# <checkout>: the only byte that differs from that commit's own synth. With --assets, the files
# its chain uploads (cdktf.out/stacks/kube-on-os/assets: its Salt tree, pillar and scripts) are kept
# too, as <commit>.assets.tar.gz (sorted, owner root, no dates): __tests__/l5-rehearsal-upgrade.test.ts
# deploys that version with its chain before upgrading it.
# __tests__/l3-upgrade-matrix.test.ts applies each one against the OpenStack API double and plans
# today's stack from its state (docs/provisioning.md, "Upgrading").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/toolchain/lib.sh"

assets=false
if [[ ${1:-} == --assets ]]; then
  assets=true
  shift
fi
(($# > 0)) || die "usage: scripts/upgrade-fixtures.sh [--assets] COMMIT... (e.g. dc03610 aa9f996)"
out="$KOO_ROOT/__tests__/fixtures/upgrade"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Only PATH, HOME and the machine's registry and proxy settings reach the old code: no TF_VAR_
# or KUBE_ON_OS_ value may reach its synth, so the fixture holds that version's defaults.
mapfile -t clean_env < <(env | grep -E '^(PATH|HOME|NODE_EXTRA_CA_CERTS|SSL_CERT_(FILE|DIR)|(npm|NPM)_CONFIG_[A-Za-z_]+|(https?|no|HTTPS?|NO)_PROXY)=' || true)

for commit in "$@"; do
  id=$(git -C "$KOO_ROOT" rev-parse --short=7 --verify --quiet "$commit^{commit}") ||
    die "'$commit' is not a commit of this repository"
  tree="$work/$id"
  mkdir -p "$tree"
  git -C "$KOO_ROOT" archive "$id" | tar -x -C "$tree"
  log "$id: npm ci"
  env -i -C "$tree" "${clean_env[@]}" npm ci --no-audit --no-fund --loglevel=error >/dev/null ||
    die "$id: npm ci failed"
  log "$id: npm run synth"
  env -i -C "$tree" "${clean_env[@]}" npm run --silent synth >/dev/null ||
    die "$id: npm run synth failed"
  sed "s|$tree|<checkout>|g" "$tree/cdktf.out/stacks/kube-on-os/cdk.tf.json" >"$out/$id.json"
  if $assets; then
    ! grep -rlF "$tree" "$tree/cdktf.out/stacks/kube-on-os/assets" || die "$id: its assets name the checkout's path"
    tar -C "$tree/cdktf.out/stacks/kube-on-os" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - assets |
      gzip -9n >"$out/$id.assets.tar.gz"
  fi
  {
    grep -v "^$id " "$out/versions.txt" 2>/dev/null || true
    printf '%s %s\n' "$id" "$(git -C "$KOO_ROOT" show -s --format=%cI "$id")"
  } | sort -k2 >"$out/versions.txt.new"
  mv "$out/versions.txt.new" "$out/versions.txt"
  rm -rf "$tree"
  log "$id: __tests__/fixtures/upgrade/$id.json"
done
