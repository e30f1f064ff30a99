"""
provisioners/lib.sh, the helpers the provisioner scripts share, sourced into bash against the fake
salt-key (__tests__/doubles/salt-cli/), or a stand-in written here for what the fake never does.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
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


def stand_in(tmp_path: Path, name: str, stdout: str, status: int = 0, stderr: str = "") -> Path:
    """
    A directory holding a program ``name`` that prints ``stdout`` and ``stderr``, exits with
    ``status``, and writes its arguments, one per line, to ``<name>.args`` beside the directory.
    """
    directory = tmp_path / "stand-ins"
    directory.mkdir(exist_ok=True)
    program = directory / name
    program.write_text(
        f"#!/bin/sh\nprintf '%s\\n' \"$@\" >{tmp_path / name}.args\n"
        f"cat <<'END'\n{stdout}\nEND\ncat >&2 <<'END'\n{stderr}\nEND\nexit {status}\n"
    )
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


def test_salt_puts_salts_json_and_stderr_side_by_side_and_goes_on_whatever_it_exits(fakes, tmp_path):
    salt = stand_in(
        tmp_path, "salt", '{"a.example": true}', status=2, stderr="ERROR: Minions returned with non-zero exit code"
    )
    result = sourced(
        fakes, 'koo_salt "$1/ping" 10 --list a.example,b.example test.ping; echo "went on"', str(tmp_path), path=salt
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "went on\n", "")
    assert (tmp_path / "salt.args").read_text().splitlines() == [
        "--out=json",
        "--static",
        "--timeout=10",
        "--list",
        "a.example,b.example",
        "test.ping",
    ]
    assert (tmp_path / "ping.json").read_text() == '{"a.example": true}\n'
    assert (tmp_path / "ping.err").read_text() == "ERROR: Minions returned with non-zero exit code\n"


@pytest.mark.parametrize(
    ("stderr", "which", "said"),
    [
        (
            "\nSalt request timed out.\nTraceback (most recent call last):\nKeyError: 'x'\n",
            "",
            " (salt: Salt request timed out.)",
        ),
        (
            "\nSalt request timed out.\nTraceback (most recent call last):\nKeyError: 'x'\n\n",
            "last",
            " (salt: KeyError: 'x')",
        ),
        ("\n  \n", "", ""),
        ("", "last", ""),
    ],
    ids=["first line", "last line", "blank lines", "empty"],
)
def test_salt_said_is_the_first_or_last_line_of_salts_stderr_or_nothing(fakes, tmp_path, stderr, which, said):
    (tmp_path / "call.err").write_text(stderr)
    result = sourced(fakes, 'echo "[$(koo_salt_said "$1" ${2:+"$2"})]"', str(tmp_path / "call"), which)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"[{said}]\n", "")


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("koo_require_dns_name NODE_ID K8s-Worker", 'NODE_ID "K8s-Worker" is not a lower-case DNS name'),
        ('koo_require_dns_name "minion id" a..example', 'minion id "a..example" is not a lower-case DNS name'),
        ("koo_require_ipv4 NODE_ADDRESS 10.1.0.256", 'NODE_ADDRESS "10.1.0.256" is not an IPv4 address'),
        ("koo_require_seconds --timeout 0", '--timeout must be a positive whole number of seconds, got "0"'),
        ("koo_require_seconds KOO_X 5s", 'KOO_X must be a positive whole number of seconds, got "5s"'),
        ("koo_require_drain_seconds 3601", 'DRAIN_SECONDS "3601" is not a whole number of seconds from 1 to 3600'),
        ("koo_require_drain_seconds 0", 'DRAIN_SECONDS "0" is not a whole number of seconds from 1 to 3600'),
    ],
)
def test_a_value_that_is_not_what_is_required_is_a_usage_error_naming_it(fakes, code, message):
    result = sourced(fakes, f'{code}; echo "went on"')
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"script.sh: {message}\nusage: script.sh ARG\n"


def test_a_value_that_is_what_is_required_passes(fakes):
    code = (
        "koo_require_dns_name NODE_ID k8s-worker-0.lab.example; koo_require_ipv4 NODE_ADDRESS 10.1.0.100; "
        "koo_require_seconds --timeout 900; koo_require_drain_seconds 3600; koo_require_drain_seconds 1"
    )
    result = sourced(fakes, f'{code}; echo "went on"')
    assert (result.returncode, result.stdout, result.stderr) == (0, "went on\n", "")
