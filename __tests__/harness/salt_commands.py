"""
The venv's salt, salt-key, salt-run and salt-call for the harness, run by one
harness.salt_cli_server per test process: each command as a fork of a process that imported Salt
once, with the caller's environment and working directory, as subprocess.run would run it.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

_server: subprocess.Popen | None = None
_lock = threading.Lock()


def _stop() -> None:
    if _server is not None and _server.poll() is None:
        assert _server.stdin is not None
        _server.stdin.close()
        _server.wait()


atexit.register(_stop)


def run(
    command: str, *args: str, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """
    ``command ARGS`` (salt, salt-key, salt-run or salt-call) with ``env`` (this process's when
    None); raises subprocess.TimeoutExpired past ``timeout``, as subprocess.run does.
    """
    global _server
    request = {
        "command": command,
        "args": list(args),
        "env": dict(os.environ if env is None else env),
        "cwd": os.getcwd(),
        "timeout": timeout,
    }
    with _lock:
        if _server is None or _server.poll() is not None:
            _server = subprocess.Popen(
                # The toolchain venv's python, which runs pytest: its Salt is the pinned one.
                [sys.executable, str(Path(__file__).with_name("salt_cli_server.py"))],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        assert _server.stdin is not None and _server.stdout is not None
        _server.stdin.write(json.dumps(request) + "\n")
        _server.stdin.flush()
        answer = json.loads(_server.stdout.readline() or "null")
    argv = [command, *args]
    if answer is None:
        raise AssertionError(f"the salt command server ended before answering {' '.join(argv)}")
    if answer["timed_out"]:
        raise subprocess.TimeoutExpired(argv, timeout, answer["stdout"], answer["stderr"])
    return subprocess.CompletedProcess(argv, answer["returncode"], answer["stdout"], answer["stderr"])
