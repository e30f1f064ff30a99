#!/usr/bin/env bash
# Regenerates providers/<name>@<version>.json from the real provider binary: `tofu init` (from the
# local mirror) and `tofu providers schema -json` for each provider in cdktf.json, kept
# pretty-printed for reviewable diffs, then the bindings. Run after bumping a provider in
# scripts/toolchain/go/<provider>/go.mod and cdktf.json, then commit the JSON.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/toolchain/env.sh"

bash "$KOO_ROOT/scripts/toolchain/terraform.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
node -e '
  const { terraformProviders } = require(process.argv[1]);
  for (const constraint of terraformProviders) {
    const [source, version] = constraint.split("@");
    console.log([source.split("/").pop(), source, version].join(" "));
  }' "$KOO_ROOT/cdktf.json" |
  while read -r name source version; do
    dir="$work/$name"
    mkdir -p "$dir"
    printf '{"terraform":{"required_providers":{"%s":{"source":"%s","version":"%s"}}}}\n' "$name" "$source" "$version" >"$dir/main.tf.json"
    (cd "$dir" && "$KOO_TOFU" init -backend=false -input=false >/dev/null && "$KOO_TOFU" providers schema -json) |
      python3 -m json.tool --indent 1 --sort-keys >"$KOO_ROOT/providers/$name@$version.json"
    log "wrote providers/$name@$version.json"
  done
node "$KOO_ROOT/scripts/generate-bindings.js" --force
