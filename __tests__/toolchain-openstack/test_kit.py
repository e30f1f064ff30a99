"""The OpenStack kit's process manager (scripts/openstack/koo_cloud/kit.py) on real processes: it
ends what it started, a crashed run's leftovers included, and nothing else."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts" / "openstack"))

from koo_cloud.kit import Kit, recorded_pid, start_time


def kit(state: Path) -> Kit:
    return Kit(state=state, venv=Path(sys.prefix), verbose=False)


def alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] != "Z"


def wait_gone(pid: int, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_ends_a_crashed_runs_processes_and_their_children(tmp_path: Path) -> None:
    first = kit(tmp_path / "state")
    # A parent that starts a child in its session, as gunicorn starts its worker.
    pid = first.start("parent", ["sh", "-c", "sleep 300 & echo $! > child; wait"], cwd=tmp_path)
    # The shell creates the file before echo writes to it: read it once its line is whole.
    deadline = time.monotonic() + 30
    written = ""
    while not written.endswith("\n") and time.monotonic() < deadline:
        time.sleep(0.05)
        written = (tmp_path / "child").read_text() if (tmp_path / "child").exists() else ""
    child = int(written)
    assert alive(pid) and alive(child)
    # The run that started them is gone; the next one finds them by their PID files.
    ended = kit(tmp_path / "state").stop_all(grace=5)
    assert ended == ["parent"]
    assert wait_gone(pid) and wait_gone(child)
    assert list((tmp_path / "state" / "run").glob("*.pid")) == []


def test_never_signals_a_pid_the_system_gave_to_another_process(tmp_path: Path) -> None:
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        state = tmp_path / "state"
        run = state / "run"
        run.mkdir(parents=True)
        # A PID file of ours naming the stranger's PID, with another start time: a reused PID.
        (run / "old.pid").write_text(f"{stranger.pid} {int(start_time(stranger.pid)) - 1}\n")
        assert recorded_pid(run / "old.pid") is None
        assert kit(state).stop_all(grace=1) == []
        time.sleep(0.2)
        assert stranger.poll() is None
        assert not (run / "old.pid").exists()
    finally:
        stranger.kill()
        stranger.wait()


def test_kills_what_ignores_the_polite_signal(tmp_path: Path) -> None:
    stubborn = kit(tmp_path / "state")
    pid = stubborn.start("stubborn", ["sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"])
    time.sleep(0.2)
    started = time.monotonic()
    assert stubborn.stop_all(grace=1) == ["stubborn"]
    assert wait_gone(pid)
    assert time.monotonic() - started < 5


def test_a_process_that_exited_is_no_longer_alive(tmp_path: Path) -> None:
    k = kit(tmp_path / "state")
    pid = k.start("short", ["sleep", "300"])
    assert k.alive("short")
    os.kill(pid, signal.SIGTERM)
    assert wait_gone(pid)
    assert not k.alive("short")
