#!/usr/bin/env bash
# `npm test`: installs the verification toolchain (cached), lints, type-checks, then runs every
# suite (jest: unit + L1 against real OpenTofu; pytest under the Salt venv) and prints totals.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/toolchain/lib.sh"

bash "$KOO_ROOT/scripts/toolchain.sh"
# The Debian root the rehearsal's hosts boot from; it skips itself where namespaces are not allowed.
bash "$KOO_ROOT/scripts/toolchain/debian-root.sh"
source "$KOO_ROOT/scripts/toolchain/env.sh"
cd "$KOO_ROOT"
# npm ci generated the bindings already; this is a no-op then, and a repair if .gen/ was removed.
node scripts/generate-bindings.js

bash "$KOO_ROOT/scripts/lint.sh"

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
status=0
log "jest"
npx --no-install jest --ci --json --outputFile="$results/jest.json" || status=1
log "pytest"
"$KOO_VENV/bin/pytest" -q -p no:cacheprovider --junitxml="$results/pytest.xml" __tests__/l4-salt __tests__/l5-provisioners __tests__/double-microk8s || status=1

# One closing line for both runners, read by people and by CI alike.
"$KOO_VENV/bin/python" - "$results" <<'PY'
import json, sys, xml.etree.ElementTree as ET
from pathlib import Path

results = Path(sys.argv[1])
passed = failed = skipped = 0
if (results / "jest.json").exists():
    jest = json.loads((results / "jest.json").read_text())
    passed += jest["numPassedTests"]
    failed += jest["numFailedTests"] + jest["numRuntimeErrorTestSuites"]
    skipped += jest["numPendingTests"] + jest["numTodoTests"]
else:
    failed += 1
if (results / "pytest.xml").exists():
    for suite in ET.parse(results / "pytest.xml").getroot().iter("testsuite"):
        total, errors, failures, skips = (int(suite.get(k, 0)) for k in ("tests", "errors", "failures", "skipped"))
        passed += total - errors - failures - skips
        failed += errors + failures
        skipped += skips
else:
    failed += 1
print(f"totals: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit "$status"
