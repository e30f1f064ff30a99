"""wait-cloud-init.sh TIMEOUT_SECONDS, against a fake cloud-init."""

from __future__ import annotations

import os
import subprocess

import pytest
from harness.provisioners import HOST

LONG = (
    "status: error\nextended_status: error\nboot_status_code: enabled-by-generator\nerrors:\n\t- modules-final failed"
)


def test_prints_the_host_when_cloud_init_has_finished(fakes):
    result = fakes.run("wait-cloud-init.sh", "600")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"cloud-init: finished on {HOST}\n", "")
    assert fakes.calls("cloud-init") == [["status", "--wait"]]
    assert fakes.calls("hostname") == [["-f"]]


def test_recoverable_errors_are_a_warning_and_success(fakes):
    fakes.update(cloud_init={"exit": 2, "long": "status: done\nextended_status: degraded done"})
    result = fakes.run("wait-cloud-init.sh", "600")
    assert result.returncode == 0
    assert result.stdout == (
        f"cloud-init: finished with recoverable errors on {HOST} (warning; see 'cloud-init status --long')\n"
    )


def test_an_error_prints_the_long_status_and_fails(fakes):
    fakes.update(cloud_init={"exit": 1, "long": LONG})
    result = fakes.run("wait-cloud-init.sh", "600")
    assert result.returncode == 1
    assert result.stderr == f"{LONG}\ncloud-init: failed on {HOST} (cloud-init status exit 1)\n"
    assert fakes.calls("cloud-init") == [["status", "--wait"], ["status", "--long"]]


def test_gives_up_after_the_timeout_naming_host_and_seconds(fakes):
    # cloud-init would take 10 minutes: a script that waited for it would outlast run()'s 60 s
    # and fail the test there, however loaded the machine. Not a wall-clock limit on the script.
    fakes.update(cloud_init={"exit": 0, "sleep": 600, "long": "status: running"})
    result = fakes.run("wait-cloud-init.sh", "1", timeout=60)
    assert result.returncode == 1
    assert result.stderr == f"status: running\ncloud-init: not finished on {HOST} after 1 s\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "wait-cloud-init.sh: expected one argument, got 0"),
        (("60", "70"), "wait-cloud-init.sh: expected one argument, got 2"),
        (("0",), 'wait-cloud-init.sh: TIMEOUT_SECONDS must be a positive whole number, got "0"'),
        (("ten",), 'wait-cloud-init.sh: TIMEOUT_SECONDS must be a positive whole number, got "ten"'),
        (("-5",), 'wait-cloud-init.sh: TIMEOUT_SECONDS must be a positive whole number, got "-5"'),
    ],
)
def test_rejects_a_bad_timeout_with_usage(fakes, args, message):
    result = fakes.run("wait-cloud-init.sh", *args)
    assert result.returncode == 2
    assert result.stderr == f"{message}\nusage: wait-cloud-init.sh TIMEOUT_SECONDS\n"
    assert fakes.calls("cloud-init") == []


def test_the_fake_state_stays_whole_when_a_fake_is_killed_while_it_saves_it(fakes):
    """
    The timeout above kills the fake cloud-init whenever it is slow, on a loaded machine while it
    saves the fake state: the next fake must still read that state (CI failed the test above so).
    """
    fakes.update(padding="x" * 20_000_000)  # a save that takes a few milliseconds
    for _ in range(3):
        before = os.stat(fakes.state_file)
        command = [fakes.bin / "cloud-init", "status", "--long"]
        fake = subprocess.Popen(command, env=fakes.env, stdout=subprocess.DEVNULL)
        # Killed at the first sign of the save: the file truncated, or replaced.
        while fake.poll() is None:
            now = os.stat(fakes.state_file)
            if (now.st_ino, now.st_size, now.st_mtime_ns) != (before.st_ino, before.st_size, before.st_mtime_ns):
                fake.kill()
                break
        fake.wait()
        assert len(fakes.read()["padding"]) == 20_000_000
