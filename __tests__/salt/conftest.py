"""Shared fixtures: a masterless Salt minion confined to a temporary directory."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

VENV_BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def load_module(name: str, path: Path):
    """A fresh copy of one Salt module file, imported by path, for unit tests to patch dunders on."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class LocalMinion:
    """
    Runs the venv's real ``salt-call --local`` with every Salt directory under ``root``. The
    file and pillar roots default to empty directories in ``root``; tests point them at the
    project's ``salt/`` and ``pillar/`` or fill them themselves.
    """

    def __init__(
        self,
        root: Path,
        minion_id: str = "test-minion.kube-on-os",
        file_root: Path | None = None,
        pillar_root: Path | None = None,
        grains: dict | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.root = root
        self.file_root = file_root or root / "srv" / "salt"
        self.pillar_root = pillar_root or root / "srv" / "pillar"
        self.config_dir = root / "etc" / "salt"
        self.env = env
        for directory in (self.file_root, self.pillar_root, self.config_dir):
            directory.mkdir(parents=True, exist_ok=True)
        config = {
            "id": minion_id,
            "file_client": "local",
            "root_dir": str(root),
            "cachedir": str(root / "cache"),
            "pki_dir": str(root / "pki"),
            "sock_dir": str(root / "sock"),
            "log_file": str(root / "minion.log"),
            "file_roots": {"base": [str(self.file_root)]},
            "pillar_roots": {"base": [str(self.pillar_root)]},
            "grains": grains or {},
        }
        (self.config_dir / "minion").write_text(yaml.safe_dump(config))

    def call(self, *args: str):
        """``salt-call --local ARGS --out=json``, returning the parsed ``local`` result."""
        result = subprocess.run(
            [str(VENV_BIN / "salt-call"), "--local", f"--config-dir={self.config_dir}", "--out=json", *args],
            capture_output=True,
            text=True,
            env=self.env,
            check=False,
            timeout=300,
        )
        assert result.returncode == 0, f"salt-call {' '.join(args)} failed:\n{result.stderr}{result.stdout}"
        return json.loads(result.stdout)["local"]


@pytest.fixture
def minion(tmp_path: Path) -> LocalMinion:
    return LocalMinion(tmp_path)


@pytest.fixture
def microk8s(monkeypatch):
    """The microk8s execution module package, imported as Salt names it, fresh for each test."""
    monkeypatch.syspath_prepend(str(ROOT / "salt" / "_modules"))
    module = importlib.import_module("microk8s")
    yield module
    for name in [n for n in sys.modules if n == "microk8s" or n.startswith("microk8s.")]:
        del sys.modules[name]


FAKE_MICROK8S = Path(__file__).parent / "fake_microk8s.py"


class FakeMicrok8s:
    """
    One node of the fake microk8s (fake_microk8s.py): its $SNAP_DATA, a bin/ with ``microk8s``,
    the environment that names it, and ``__salt__`` functions over it for the unit tests.
    Nodes sharing ``cluster`` find each other by address.
    """

    def __init__(self, root: Path, cluster: Path, address: str = "10.1.0.10", hostname: str = "k8s-master") -> None:
        self.home = root / "snap_data"
        self.bin = root / "bin"
        self.bin.mkdir(parents=True, exist_ok=True)
        (self.bin / "microk8s").symlink_to(FAKE_MICROK8S)
        self.address = address
        self.env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(root),
            "FAKE_MICROK8S_DIR": str(self.home),
            "FAKE_MICROK8S_ADDRESS": address,
            "FAKE_MICROK8S_HOSTNAME": hostname,
            "FAKE_MICROK8S_CLUSTER": str(cluster),
        }
        self.logged: list[str] = []
        self.run("status", "--format", "yaml")  # registers the node and lays out $SNAP_DATA

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(self.bin / "microk8s"), *args], env=self.env, capture_output=True, text=True, check=False, timeout=60
        )

    def run_all(self, cmd, python_shell=True, timeout=None, ignore_retcode=False, log_callback=None) -> dict:
        """cmd.run_all as Salt's cmdmod runs it, logging the command through ``log_callback``."""
        assert python_shell is False, "microk8s must be called with an argument list, not a shell string"
        assert timeout, "every microk8s call needs a timeout"
        self.logged.append(log_callback(" ".join(cmd)) if log_callback else " ".join(cmd))
        result = self.run(*cmd[1:])
        return {"retcode": result.returncode, "stdout": result.stdout, "stderr": result.stderr}

    def salt_functions(self, **extra) -> dict:
        return {
            "cmd.run_all": self.run_all,
            "config.get": lambda key, default=None: str(self.home) if key == "microk8s.snap_data" else default,
            "file.file_exists": os.path.isfile,
            "file.read": lambda path: Path(path).read_text(),
            "file.write": lambda path, text: Path(path).write_text(text),
            **extra,
        }

    def state(self) -> dict:
        return json.loads((self.home / "state.json").read_text())
