"""A node of the fake microk8s CLI that the Salt module tests drive, alone or in a cluster."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from harness.layout import LAB
from harness.salt_minion import ROOT

# What each fake node's microk8s and snap link to: fake_microk8s.py, imported (run.py says why).
FAKE_MICROK8S = ROOT / "__tests__" / "doubles" / "microk8s" / "run.py"


class FakeMicrok8s:
    """
    One node of the fake microk8s (__tests__/doubles/microk8s/fake_microk8s.py): its $SNAP_DATA,
    a bin/ with ``microk8s``, the environment that names it, and ``__salt__`` functions over it for
    the unit tests.
    Nodes sharing ``cluster`` find each other by address.
    """

    def __init__(
        self,
        root: Path,
        cluster: Path,
        address: str = LAB.master.address,
        hostname: str = LAB.master.name,
        internal_ips: list[str] | None = None,
    ) -> None:
        """
        ``address`` and ``hostname``: the Kubernetes master's unless given. ``internal_ips``: the
        Node's InternalIPs in its status's order, when not ``address`` alone.
        """
        self.home = root / "snap_data"
        self.bin = root / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        (self.bin / "microk8s").symlink_to(FAKE_MICROK8S)
        # The fake is snapd's `snap` as well, for microk8s (install, refresh, list).
        (self.bin / "snap").symlink_to(FAKE_MICROK8S)
        self.address = address
        self.env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(root),
            "FAKE_MICROK8S_DIR": str(self.home),
            "FAKE_MICROK8S_ADDRESS": address,
            "FAKE_MICROK8S_HOSTNAME": hostname,
            "FAKE_MICROK8S_CLUSTER": str(cluster),
            **({"FAKE_MICROK8S_NODE_IPS": ",".join(internal_ips)} if internal_ips else {}),
        }
        self.logged: list[str] = []
        self.stdins: list[str] = []
        self.run("status", "--format", "yaml")  # registers the node and lays out $SNAP_DATA

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.bin / "microk8s"), *args], env=self.env, capture_output=True, text=True, check=False, timeout=60
        )

    def run_all(
        self,
        cmd,
        python_shell=True,
        timeout=None,
        ignore_retcode=False,
        log_callback=None,
        stdin=None,
        output_loglevel="debug",
    ) -> dict:
        """
        cmd.run_all as Salt's cmdmod runs it, logging the command through ``log_callback``
        unless ``output_loglevel`` is quiet (cmdmod logs nothing of such a call); ``stdin`` is
        the command's standard input, recorded in ``stdins``.
        """
        assert python_shell is False, "microk8s must be called with an argument list, not a shell string"
        assert timeout, "every microk8s call needs a timeout"
        if output_loglevel != "quiet":
            self.logged.append(log_callback(" ".join(cmd)) if log_callback else " ".join(cmd))
        if stdin is not None:
            self.stdins.append(stdin)
        assert cmd[0] in ("microk8s", "snap"), f"the fake node runs microk8s and snap, not {cmd[0]}"
        result = subprocess.run(
            [str(self.bin / cmd[0]), *cmd[1:]],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        return {"retcode": result.returncode, "stdout": result.stdout, "stderr": result.stderr}

    def salt_functions(self, **extra) -> dict:
        return {
            "cmd.run_all": self.run_all,
            "config.get": lambda key, default=None: str(self.home) if key == "microk8s.snap_data" else default,
            "file.file_exists": os.path.isfile,
            "file.read": lambda path: Path(path).read_text(),
            # Salt's file.write: each argument written as a line of its own.
            "file.write": lambda path, *lines: Path(path).write_text("".join(f"{line}\n" for line in lines)),
            **extra,
        }

    def state(self) -> dict:
        return json.loads((self.home / "state.json").read_text())

    def database(self) -> dict:
        """The dqlite members and Kubernetes nodes of this node's cluster (as the fake keeps them)."""
        path = Path(self.env["FAKE_MICROK8S_CLUSTER"]) / ".dqlite" / f"{self.state()['cluster']}.json"
        return json.loads(path.read_text())

    def ca(self) -> str:
        """The node's CA certificate, $SNAP_DATA/certs/ca.crt."""
        return (self.home / "certs" / "ca.crt").read_text()
