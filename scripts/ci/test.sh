#!/usr/bin/env bash
# The pipeline's test job: `npm test`, everything .ci/run runs, but the linters: the test job needs
# the lint job, which ran scripts/lint.sh on this very commit (KOO_LINTED).
#
# KOO_CI_TESTS, when set, names the jest files to run instead. It exists for
# __tests__/journey-gitlab-ci.test.ts, which runs this pipeline locally from inside `npm test`: running
# `npm test` again in there would recurse (npm test → local pipeline → npm test → ...) and at
# least double the suite's time, for nothing, since the outer `npm test` is running every suite
# already. The local run still does what npm test does before its suites (the toolchain, into the
# job's cache), then one small suite: a pipeline from an empty cache meets what a real test job
# meets.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$KOO_ROOT"

tests=()
if [[ -n ${KOO_CI_TESTS:-} ]]; then
  read -r -a tests <<<"$KOO_CI_TESTS"
  # Blank is a mistake, not "everything": jest with no file would run this pipeline's test again.
  ((${#tests[@]} > 0)) || ci_die "KOO_CI_TESTS is blank; leave it empty to run npm test, or name jest files"
  for test in "${tests[@]}"; do
    [[ -f $test ]] || ci_die "KOO_CI_TESTS names '$test', which does not exist"
    [[ $(basename "$test") != journey-gitlab-ci.test.ts ]] || ci_die "KOO_CI_TESTS must not name $test: it would run this pipeline again"
  done
fi

ci_go
ci_python
export KOO_LINTED="the pipeline's lint job (the test job needs it)"
((${#tests[@]} > 0)) || exec npm test
bash scripts/toolchain.sh
source scripts/toolchain/env.sh
log "lint: done by $KOO_LINTED"
log "test: only ${tests[*]} (KOO_CI_TESTS); npm test runs everything"
exec npx --no-install jest --ci "${tests[@]}"
