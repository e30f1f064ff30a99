"""
A pytest plugin (pytest.ini: ``-p harness.timing``) for ``npm test``'s reports, active only when
scripts/test.sh sets KOO_TIMING_DIR:

- each test file's wall and CPU time, as scripts/test/cpu-meter.js measures a jest suite's: the
  process running the file moves into a cgroup of its own under KOO_TIMING_CGROUP, so that the
  Salt masters and minions a file starts are counted with it; without cgroups, the process's own
  CPU time and its reaped children's;
- where KOO_SCHED_CGROUP names a cgroup v1 cpu hierarchy, the process also moves into a cgroup of
  its own there, weighted as cpu-meter.js's ``weigh`` does (the suites KOO_CRITICAL_SUITES names,
  jest ones today, get CRITICAL_WEIGHT times the others' CPU weight);
- every test's outcome by node id (the run's controller writes it), for the check that no test
  that passed before has disappeared (scripts/test/report.js).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

TICKS = os.sysconf("SC_CLK_TCK")
CRITICAL_WEIGHT = 8  # as scripts/test/cpu-meter.js


def _dir() -> Path | None:
    value = os.environ.get("KOO_TIMING_DIR")
    return Path(value) if value else None


def _process_cpu_ms() -> float | None:
    """utime + stime + cutime + cstime of this process, as cpu-meter.js reads them."""
    try:
        stat = Path(f"/proc/{os.getpid()}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) * 1000 / TICKS


def _cgroup_cpu_ms(cgroup: Path) -> float | None:
    try:
        return int((cgroup / "cpuacct.usage").read_text()) / 1e6
    except OSError:
        pass
    try:
        found = re.search(r"^usage_usec (\d+)$", (cgroup / "cpu.stat").read_text(), re.M)
        return int(found.group(1)) / 1000 if found else None
    except OSError:
        return None


def _key(suite: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", suite)


def _weigh(suite: str, key: str) -> None:
    """Moves this process into the scheduler's cgroup ``key``, as cpu-meter.js's ``weigh``."""
    root = os.environ.get("KOO_SCHED_CGROUP")
    if not root:
        return
    try:
        cgroup = Path(root) / key
        cgroup.mkdir(exist_ok=True)
        critical = suite in os.environ.get("KOO_CRITICAL_SUITES", "").split(",")
        (cgroup / "cpu.shares").write_text(f"{1024 * CRITICAL_WEIGHT if critical else 1024}\n")
        (cgroup / "cgroup.procs").write_text(f"{os.getpid()}\n")
    except OSError:
        pass  # unweighted


class _Suite:
    """The test file this process is running now."""

    def __init__(self, suite: str):
        self.suite = suite
        self.cgroup: Path | None = None
        root = os.environ.get("KOO_TIMING_CGROUP")
        if root:
            try:
                cgroup = Path(root) / f"pytest-{_key(suite)}-{os.getpid()}"
                cgroup.mkdir(exist_ok=True)
                (cgroup / "cgroup.procs").write_text(f"{os.getpid()}\n")
                self.cgroup = cgroup
            except OSError:
                self.cgroup = None
        _weigh(suite, f"pytest-{_key(suite)}-{os.getpid()}")
        self.started = time.time()
        self.process_cpu = _process_cpu_ms()

    def close(self, out: Path) -> None:
        ended = time.time()
        cpu = _cgroup_cpu_ms(self.cgroup) if self.cgroup else None
        source = "cgroup"
        if cpu is None:
            now = _process_cpu_ms()
            cpu = None if now is None or self.process_cpu is None else now - self.process_cpu
            source = "process and reaped children"
        record = {
            "runner": "pytest",
            "suite": self.suite,
            "wallMs": round((ended - self.started) * 1000),
            "cpuMs": cpu,
            "cpuSource": source,
            "startedAt": round(self.started * 1000),
            "endedAt": round(ended * 1000),
        }
        (out / "suites").mkdir(parents=True, exist_ok=True)
        (out / "suites" / f"pytest-{_key(self.suite)}-{os.getpid()}.json").write_text(json.dumps(record))


_current: _Suite | None = None


def _file_of(item: pytest.Item | None) -> str | None:
    return None if item is None else item.nodeid.split("::")[0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    global _current
    out = _dir()
    if out is None:
        yield
        return
    suite = _file_of(item)
    if _current is None or _current.suite != suite:
        if _current is not None:
            _current.close(out)
        _current = _Suite(suite)
    yield
    if _file_of(nextitem) != suite:
        _current.close(out)
        _current = None


_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # A test passed when its call passed and its setup and teardown did not fail; skipped when any phase skipped.
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.skipped and _outcomes.get(report.nodeid) != "failed":
        _outcomes[report.nodeid] = "skipped"
    elif report.when == "call" and report.nodeid not in _outcomes:
        _outcomes[report.nodeid] = "passed"


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = _dir()
    # xdist's workers report to the controller, which writes the one list.
    if out is None or hasattr(session.config, "workerinput"):
        return
    out.mkdir(parents=True, exist_ok=True)
    (out / "pytest-outcomes.json").write_text(json.dumps(_outcomes, indent=0, sort_keys=True))
