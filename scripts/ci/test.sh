#!/usr/bin/env bash
# The pipeline's test job: `npm test`, everything .ci/run runs.
#
# KOO_CI_TESTS, when set, names the jest files to run instead. It exists for
# __tests__/gitlab-ci.test.ts, which runs this pipeline locally from inside `npm test`: running
# `npm test` again in there would recurse (npm test → local pipeline → npm test → ...) and at
# least double the suite's time, for nothing, since the outer `npm test` is running every suite
# already. The local run names one small suite instead, which still proves the job's wiring
# (cache, toolchain, jest) on its own.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KOO_ROOT"

if [[ -z ${KOO_CI_TESTS:-} ]]; then
  ci_go
  ci_python
  exec npm test
fi
read -r -a tests <<<"$KOO_CI_TESTS"
for test in "${tests[@]}"; do
  [[ -f $test ]] || ci_die "KOO_CI_TESTS names '$test', which does not exist"
  [[ $(basename "$test") != gitlab-ci.test.ts ]] || ci_die "KOO_CI_TESTS must not name $test: it would run this pipeline again"
done
source scripts/toolchain/env.sh
log "test: only ${tests[*]} (KOO_CI_TESTS); npm test runs everything"
exec npx --no-install jest --ci "${tests[@]}"
