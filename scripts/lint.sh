#!/usr/bin/env bash
# The linters and the type check, first in `npm test` (scripts/test.sh) and on their own in the
# pipeline's lint job (scripts/ci/lint.sh): one list, so the two cannot drift apart.
# Needs the toolchain's Python venv and shellcheck (scripts/toolchain.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/toolchain/env.sh"
cd "$KOO_ROOT"

log "lint: eslint, prettier, shellcheck, ruff, salt-lint, yamllint, import cycles, copies"
npx --no-install eslint .
node scripts/check-import-cycles.js
# .jscpd.json: the product's TypeScript, Python and shell; any run of 4 lines (30 tokens) written
# twice fails. A clean run prints nothing; a failing one runs again to list its clones.
npx --no-install jscpd --silent >/dev/null || npx --no-install jscpd
npx --no-install prettier --check --log-level warn .
shellcheck -x scripts/*.sh scripts/toolchain/*.sh scripts/ci/*.sh scripts/openstack/*.sh scripts/openstack/cloud templates/cloud-init/files/*.sh .ci/run provisioners/*.sh
"$KOO_VENV/bin/ruff" check --quiet __tests__ salt provisioners scripts/openstack
"$KOO_VENV/bin/ruff" format --check --quiet __tests__ salt provisioners scripts/openstack
find salt pillar -name '*.sls' -print0 | xargs -0 "$KOO_VENV/bin/salt-lint"
# Only the pure-YAML files: SLS with Jinja is salt-lint's.
"$KOO_VENV/bin/yamllint" --strict -c .yamllint.yaml salt/*/defaults.yaml salt/salt_master/files/master.conf \
  pillar/pillar.example pillar/_from_terraform.sls.example pillar/environments/defaults.sls \
  pillar/roles/*.sls .gitlab-ci.yml
log "type check: tsc --noEmit"
npx --no-install tsc --noEmit
