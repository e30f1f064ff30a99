"""
provisioners/supervise.py, the process supervisor of the provisioner scripts, run as they run it
(lib.sh's KOO_SUPERVISE): its command line, and the state.event reader over the events a real
Salt 3007 master printed (fixtures/). orchestrate.sh's tests (test_orchestrate.py) interrupt it,
and kill the script that started it.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness.provisioners import FIXTURES, PROVISIONERS, leftover_processes
from harness.real_salt import FAILED_LINES

READY = "kube-on-os/orchestrate/ready/1-2"
DONE = "kube-on-os/orchestrate/done/1-2"


def supervise(bin_dir: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """
    supervise.py ARGS... as the scripts run it: through lib.sh sourced from ``bin_dir``, with
    Python's bytecode on, as on the hosts (some machines turn it off in the environment).
    """
    return subprocess.run(
        ["bash", "-c", 'source "$1/lib.sh" && exec "${KOO_SUPERVISE[@]}" "${@:2}"', "supervise", str(bin_dir), *args],
        env={name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_parses_with_the_python_of_ubuntu_20_04():
    ast.parse((PROVISIONERS / "supervise.py").read_text(), feature_version=(3, 8))


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["watch", "--", "true"],
        ["events", "--ready-tag", READY, "--done-tag", DONE, "--", "true"],
        ["events", "--ready-tag", READY, "--done-tag", DONE, "--ready-file", "ready", "--"],
        ["events", "--ready-tag", READY, "--ready-file", "ready", "--done-tag"],
    ],
    ids=lambda args: " ".join(args) or "nothing",
)
def test_a_bad_command_line_exits_2_with_the_usage_and_runs_nothing(tmp_path, args):
    result = supervise(PROVISIONERS, *args)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("usage: supervise.py")
    assert ": error: " in result.stderr.splitlines()[-1]


def test_events_prints_each_job_return_touches_the_ready_file_and_stops_at_the_done_tag(tmp_path):
    # The events as state.event prints them, this run's tags around them, and what comes after the
    # done tag, which nobody reads: a job return, then a command that would run on.
    events = FIXTURES / "state-event-failed.txt"
    after = "salt/job/1/ret/k8s-master.lab.example\t" + '{"id": "k8s-master.lab.example", "fun": "test.echo"}'
    emit = tmp_path / "emit.sh"
    emit.write_text(
        f"printf '%s\\t{{}}\\n' {READY}\ncat {events}\nprintf '%s\\t{{}}\\n' {DONE}\n"
        f"printf '%s\\n' '{after}'\nsleep 60\n"
    )
    ready = tmp_path / "ready"
    result = supervise(
        PROVISIONERS,
        "events",
        "--ready-tag",
        READY,
        "--done-tag",
        DONE,
        "--ready-file",
        str(ready),
        "--",
        "sh",
        str(emit),
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == FAILED_LINES
    assert ready.exists()
    # The command's whole session is stopped, its sleep with it.
    assert leftover_processes(str(emit)) == []


def test_the_import_of_salt_output_leaves_no_bytecode_for_root_beside_the_scripts(tmp_path):
    # The scripts run as root from the deploy user's ~/.kube-on-os/bin, which the next apply
    # deletes as that user: a root-owned __pycache__ in it would stop every later apply.
    bin_dir = tmp_path / "bin"
    shutil.copytree(PROVISIONERS, bin_dir, ignore=shutil.ignore_patterns("__pycache__"))
    done = [sys.executable, "-c", f"print('{DONE}\\t{{}}')"]
    result = supervise(
        bin_dir,
        "events",
        "--ready-tag",
        READY,
        "--done-tag",
        DONE,
        "--ready-file",
        str(tmp_path / "ready"),
        "--",
        *done,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert sorted(path.name for path in bin_dir.iterdir()) == sorted(
        path.name for path in PROVISIONERS.iterdir() if path.name != "__pycache__"
    )
