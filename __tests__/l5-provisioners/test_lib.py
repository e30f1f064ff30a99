"""
provisioners/lib.sh, the helpers the provisioner scripts share, sourced into bash against the fake
salt-key (__tests__/doubles/salt-cli/), or a stand-in written here for what the fake never does.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness.provisioners import HOST, PROVISIONERS


def sourced(fakes, code: str, *args: str, path: Path | None = None) -> subprocess.CompletedProcess:
    """``code`` run by bash with lib.sh sourced as a script sources it, ARGS as $1...; ``path`` first on PATH."""
    env = {**fakes.env, "KOO_USAGE": "script.sh ARG"}
    if path is not None:
        env["PATH"] = f"{path}:{env['PATH']}"
    return subprocess.run(
        ["bash", "-c", f'set -euo pipefail\nsource "$KOO_LIB"\n{code}', "script.sh", *args],
        env={**env, "KOO_LIB": str(PROVISIONERS / "lib.sh")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def stand_in(tmp_path: Path, name: str, stdout: str, status: int = 0) -> Path:
    """A directory holding a program ``name`` that prints ``stdout`` and exits with ``status``."""
    directory = tmp_path / "stand-ins"
    directory.mkdir(exist_ok=True)
    program = directory / name
    program.write_text(f"#!/bin/sh\ncat <<'END'\n{stdout}\nEND\nexit {status}\n")
    os.chmod(program, 0o755)
    return directory


def test_key_status_prints_each_ids_status_then_the_unexpected_pending_keys(fakes, tmp_path):
    fakes.update(keys={"minions": ["a.example"], "minions_pre": ["b.example", "c.example"]})
    result = sourced(fakes, 'koo_key_status "$1" a.example b.example d.example', str(tmp_path))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "accepted a.example\npending b.example\nabsent d.example\nunexpected c.example\n"
    assert fakes.calls("salt-key") == [["--list=all", "--out=json"]]


def test_key_status_ends_the_script_when_salt_key_fails(fakes, tmp_path):
    fakes.update(salt_key_error="[ERROR   ] Permission denied: '/etc/salt/pki/master/minions'\nsecond line")
    result = sourced(fakes, 'koo_key_status "$1" a.example; echo "went on"', str(tmp_path))
    assert (result.returncode, result.stdout) == (1, "")
    assert (
        result.stderr
        == f"salt-key --list=all failed on {HOST}: [ERROR   ] Permission denied: '/etc/salt/pki/master/minions'\n"
    )


def test_key_status_ends_the_script_when_salt_key_prints_no_key_lists(fakes, tmp_path):
    salt_key = stand_in(tmp_path, "salt-key", "\nSalt request timed out.\nagain")
    result = sourced(fakes, 'koo_key_status "$1" a.example; echo "went on"', str(tmp_path), path=salt_key)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"salt-key --list=all printed no key lists on {HOST}: Salt request timed out.\n"


def test_salt_key_gives_what_salt_key_printed_to_the_variable_named(fakes):
    fakes.update(keys={"minions_pre": ["a.example", "b.example"]})
    result = sourced(fakes, 'koo_salt_key accept a.example said; echo "[$said]"; koo_salt_key delete b.example')
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        "[The following keys are going to be accepted:",
        "Unaccepted Keys:",
        "a.example",
        "Key for minion a.example accepted.]",
    ]
    assert fakes.calls("salt-key") == [["-y", "--accept=a.example"], ["-y", "--delete=b.example"]]
    assert fakes.read()["keys"]["minions"] == ["a.example"]
    assert fakes.read()["keys"]["minions_pre"] == []


def test_salt_key_ends_the_script_naming_the_action_when_salt_key_fails(fakes):
    fakes.update(salt_key_error="\n[ERROR   ] The key of a.example is locked\nsecond line")
    result = sourced(fakes, 'koo_salt_key delete a.example; echo "went on"')
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"salt-key --delete=a.example failed on {HOST}: [ERROR   ] The key of a.example is locked\n"
