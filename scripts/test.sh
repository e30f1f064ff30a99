#!/usr/bin/env bash
# `npm test`: installs the verification toolchain (cached), lints, type-checks, then runs every
# suite, jest's and pytest's side by side, and ends with one report (scripts/test/report.js): the
# time report, the check that every test of __tests__/test-names/passing.txt passed, and the totals.
#
#   npm test              everything (.ci/run runs this)
#   npm run test:quick    the inner loop (--quick): lint and the type check, L0, the L1 checks that
#                         need no double, the Salt module and state unit tests
#
# Both runners run several suites at once (docs/development.md, "Where the time goes"):
# KOO_JEST_WORKERS and KOO_PYTEST_WORKERS change how many. KOO_TEST_RESULTS names a directory
# to keep the results and timings in (npm run bench:tests reads them); a temporary one otherwise.
# KOO_LINTED, when set, names what already linted this very tree (the pipeline's lint job, which
# the test job needs: scripts/ci/test.sh), and the linters do not run again.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/toolchain/lib.sh"
# Python keeps the bytecode it compiles, as on a user's machine. Some machines turn that off
# (PYTHONDONTWRITEBYTECODE=1 in this machine's image): then what runs in the tests' environment
# (the Salt master, salt-call, a fake's modules) compiles its modules again at every start.
unset PYTHONDONTWRITEBYTECODE

quick=false
case "${1:-}" in
  "") ;;
  --quick) quick=true ;;
  *) die "usage: scripts/test.sh [--quick] (got '$1')" ;;
esac

results=${KOO_TEST_RESULTS:-}
if [[ -z $results ]]; then
  results=$(mktemp -d)
  keep_results=false
else
  rm -rf "$results"
  mkdir -p "$results"
  keep_results=true
fi
export KOO_TIMING_DIR="$results"
cgroups=()
cloud_started=false
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  local run left dir
  for run in "${cgroups[@]}"; do
    # A suite's cgroup that still holds a process cannot be removed: that suite left it running.
    left=()
    for dir in "$run"/*/; do
      [[ -d $dir ]] || continue
      if [[ -n $(cat "$dir/cgroup.procs" 2>/dev/null) ]]; then left+=("$(basename "$dir")"); else rmdir "$dir"; fi
    done
    if ((${#left[@]} == 0)); then
      rmdir "$run"
    else
      log "processes outlived their suites: ${left[*]} (in $run)"
    fi
  done
  # The real OpenStack services, if this run started them (below); only what the kit started ends.
  if $cloud_started; then "$KOO_ROOT/scripts/openstack/cloud" down --quiet || log "the OpenStack kit did not stop cleanly"; fi
  $keep_results || rm -rf "$results"
}
trap cleanup EXIT

# mark NAME: the run's next step starts now (the time report reads the steps from these marks).
mark() {
  echo "$1 $(date +%s%3N)" >>"$results/steps"
}

mark toolchain
# The Debian root (the rehearsal's hosts; it skips itself where namespaces are not allowed) and
# Node.js of each LTS line (the laptop journey's) download while the rest of the toolchain builds.
bash "$KOO_ROOT/scripts/toolchain/debian-root.sh" &
debian_root=$!
bash "$KOO_ROOT/scripts/toolchain/node.sh" &
node_lines=$!
bash "$KOO_ROOT/scripts/toolchain.sh" || { wait "$debian_root" "$node_lines" || true; exit 1; }
wait "$debian_root"
wait "$node_lines"
source "$KOO_ROOT/scripts/toolchain/env.sh"
cd "$KOO_ROOT"
# npm ci generated the bindings already; this is a no-op then, and a repair if .gen/ was removed.
node scripts/generate-bindings.js

# The real OpenStack services (scripts/openstack/) start while the linters run: the L3 journeys on
# them (__tests__/l3-openstack.test.ts) wait for this start, from the kit's cached snapshot when
# there is one. What a crashed earlier run left running is ended first; the EXIT trap ends it all.
# The one test file on them ends them when it is done (KOO_CLOUD_DOWN_AFTER_USE).
if ! $quick; then
  cloud_started=true
  export KOO_CLOUD_DOWN_AFTER_USE=1
  "$KOO_ROOT/scripts/openstack/cloud" up --quiet >"$results/cloud-up.log" 2>&1 &
fi

mark lint
if [[ -n ${KOO_LINTED:-} ]]; then
  log "lint: done by $KOO_LINTED"
else
  bash "$KOO_ROOT/scripts/lint.sh"
fi

# Each suite's CPU time is counted in a cgroup of its own, where this machine allows one
# (scripts/test/cpu-meter.js); the run's cgroup is removed at the end.
cgroup=""
for hierarchy in /sys/fs/cgroup/cpuacct /sys/fs/cgroup/unified /sys/fs/cgroup; do
  if [[ -w $hierarchy && (-f $hierarchy/cpuacct.usage || -f $hierarchy/cgroup.procs) ]] &&
    mkdir "$hierarchy/kube-on-os-test-$$" 2>/dev/null; then
    cgroup="$hierarchy/kube-on-os-test-$$"
    cgroups+=("$cgroup")
    break
  fi
done
export KOO_TIMING_CGROUP="$cgroup"
# Where cgroup v1's cpu controller allows it (cpu-meter.js, weigh), more of the CPU than the others
# goes to the longest suite, the run's critical path, and to every suite that boots the rehearsal's
# hosts: their CPU grows with their wall time (Salt's clients poll while they wait, 10 ms apart),
# and every second the others hold them back costs CPU again (docs/decisions.md, "The longest suite
# comes first on the cores").
KOO_CRITICAL_SUITES=$(node -p '
  const seconds = require("./scripts/test/suite-seconds.json");
  const longest = Object.entries(seconds).sort((a, b) => b[1] - a[1])[0][0];
  [...new Set([longest, ...Object.keys(seconds).filter((suite) => suite.startsWith("__tests__/l5-rehearsal"))])].join(",")')
export KOO_CRITICAL_SUITES
KOO_SCHED_CGROUP=""
if [[ -w /sys/fs/cgroup/cpu && -f /sys/fs/cgroup/cpu/cpu.shares ]] && mkdir "/sys/fs/cgroup/cpu/kube-on-os-test-$$" 2>/dev/null; then
  KOO_SCHED_CGROUP="/sys/fs/cgroup/cpu/kube-on-os-test-$$"
  cgroups+=("$KOO_SCHED_CGROUP")
fi
export KOO_SCHED_CGROUP

if $quick; then
  jest_files=(__tests__/l0- __tests__/l1-cloud-init __tests__/l1-cluster-layout __tests__/l1-provisioning-chain __tests__/l1-validate)
  # The microk8s module's tests (a file for each submodule) and its states', test mode's among them.
  pytest_files=(__tests__/l4-salt/test_microk8s_*.py __tests__/l4-salt/test_kube_on_os_module.py
    __tests__/l4-salt/test_cloud_module.py __tests__/l4-salt/test_states_test_mode.py)
  report_args=(--subset)
else
  jest_files=()
  pytest_files=(__tests__/l4-salt __tests__/l5-provisioners __tests__/double-microk8s __tests__/toolchain-openstack)
  report_args=()
fi

run_jest() {
  npx --no-install jest --ci --json --outputFile="$results/jest.json" "$@" "${jest_files[@]}"
}
run_pytest() {
  "$KOO_VENV/bin/pytest" -q -p no:cacheprovider "$@" "${pytest_files[@]}"
}

tests() {
  local status=0 pytest_pid
  if [[ ${KOO_TEST_SERIAL:-} == 1 ]]; then
    # One suite at a time (npm run bench:tests -- --serial): each suite's own cost.
    log "jest: one suite at a time"
    run_jest --runInBand || status=1
    log "pytest: one file at a time"
    run_pytest -n 0 || status=1
    return "$status"
  fi
  # pytest in the background, its output kept for after jest's, so that neither interleaves.
  log "pytest: ${KOO_PYTEST_WORKERS:-2} workers, in the background (its output follows jest's)"
  run_pytest -n "${KOO_PYTEST_WORKERS:-2}" --dist loadfile >"$results/pytest.log" 2>&1 &
  pytest_pid=$!
  log "jest: ${KOO_JEST_WORKERS:-3} workers"
  run_jest --maxWorkers="${KOO_JEST_WORKERS:-3}" || status=1
  wait "$pytest_pid" || status=1
  log "pytest"
  cat "$results/pytest.log"
  return "$status"
}
status=0
mark tests
tests || status=1
mark end
node scripts/test/report.js "$results" "${report_args[@]}" || status=1
exit "$status"
