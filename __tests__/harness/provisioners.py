"""
The provisioner scripts under test, run with bash against fake salt, salt-key, salt-run,
cloud-init and hostname programs (__tests__/doubles/salt-cli/) that come first on PATH and share one JSON state.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

from harness.layout import Layout

ROOT = Path(__file__).resolve().parents[2]
PROVISIONERS = ROOT / "provisioners"
FAKES = ROOT / "__tests__" / "doubles" / "salt-cli"
FIXTURES = ROOT / "__tests__" / "l5-provisioners" / "fixtures"
PROGRAMS = {
    "salt": "fake_salt.py",
    "salt-key": "fake_salt_key.py",
    "salt-run": "fake_salt_run.py",
    "salt-call": "fake_salt_call.py",
    "cloud-init": "fake_cloud_init.py",
    "hostname": "fake_hostname.py",
}
# The cluster the scripts provision, and the Salt master they run on.
LAYOUT = Layout("lab.example.org")
HOST = LAYOUT.salt_master.fqdn


def lines(text: str) -> list[str]:
    """Output lines with the countdown in progress lines blanked: "(12 s left)" → "(N s left)"."""
    return [re.sub(r"\(\d+ s left\)", "(N s left)", line) for line in text.splitlines()]


class Fakes:
    """The fake programs' bin/, their state (``state``), and the log of every call they got."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir(parents=True)
        for name, script in PROGRAMS.items():
            (self.bin / name).symlink_to(FAKES / script)
        self.state_file = root / "state.json"
        self.log_file = root / "calls.jsonl"
        self.log_file.touch()
        self.write({"hostname": HOST})
        self.env = {
            **os.environ,
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "FAKE_SALT_STATE": str(self.state_file),
            "FAKE_SALT_LOG": str(self.log_file),
            "TMPDIR": str(root),
            # accept-minion-keys.sh's record of which machine each accepted key belongs to.
            "KOO_MACHINE_LEDGER": str(root / "machines"),
            # The Salt tree and pillar install-salt-tree.sh installs (none until a test makes them).
            "KOO_SALT_ROOT": str(root / "srv" / "salt"),
            "KOO_PILLAR_ROOT": str(root / "srv" / "pillar"),
        }

    def write(self, state: dict) -> None:
        self.state_file.write_text(json.dumps(state))

    def update(self, **changes) -> None:
        self.write({**self.read(), **changes})

    def read(self) -> dict:
        return json.loads(self.state_file.read_text())

    def calls(self, program: str | None = None) -> list[list[str]]:
        """Every call's argv, program name first; only ``program``'s when given, without the name."""
        calls = [json.loads(line) for line in self.log_file.read_text().splitlines()]
        return calls if program is None else [call[1:] for call in calls if call[0] == program]

    def run(self, script: str, *args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", str(PROVISIONERS / script), *args],
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def popen(self, script: str, *args: str, env: dict | None = None, session: bool = False) -> subprocess.Popen:
        """The script running, its output on pipes; ``session``: in a process group of its own."""
        return subprocess.Popen(
            ["bash", str(PROVISIONERS / script), *args],
            env={**self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=session,
        )

    def leftover_processes(self, timeout: float = 30) -> list[str]:
        """Processes still running from under this fake's directory (readers, fakes), after a grace."""
        return leftover_processes(str(self.root), timeout=timeout)


def leftover_processes(*markers: str, timeout: float = 30) -> list[str]:
    """
    Command lines of live processes that mention every marker, once none is left or at the timeout:
    a grace for processes that are ending, generous since a loaded machine ends them slowly.
    """
    deadline = time.monotonic() + timeout
    while True:
        alive = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                zombie = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
            except OSError:
                continue
            if all(marker in cmdline for marker in markers) and not zombie:
                alive.append(cmdline)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)
