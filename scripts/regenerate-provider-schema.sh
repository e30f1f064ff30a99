#!/usr/bin/env bash
# Regenerates providers/<name>@<version>.json from the real provider binary: cdktf's own schema
# reader runs `tofu init` (from the local mirror) and `tofu providers schema -json`, and we keep
# its output, pretty-printed for reviewable diffs. Run after bumping a provider in
# scripts/toolchain/go/<provider>/go.mod and cdktf.json, then commit the JSON.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/toolchain/env.sh"

bash "$KOO_ROOT/scripts/toolchain/terraform.sh"

cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
(cd "$KOO_ROOT" && node_modules/.bin/cdktf get --force --experimental-provider-schema-cache-path "$cache" >/dev/null)
for schema in "$cache"/*.json; do
  python3 -m json.tool --indent 1 --sort-keys "$schema" >"$KOO_ROOT/providers/$(basename "$schema")"
  log "wrote providers/$(basename "$schema")"
done
node "$KOO_ROOT/scripts/generate-bindings.js" --force
