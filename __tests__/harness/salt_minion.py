"""
The real Salt, run by the tests: a masterless ``salt-call --local`` confined to a temporary
directory, and Salt module files imported by path for unit tests.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import yaml

from harness import salt_commands

# The toolchain's venv, whose python runs pytest: its salt-call is the pinned Salt.
VENV_BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
# The options core.minion gives every real minion (core/files/minion.conf): the tests' minions,
# masterless or not, run with them too.
MINION_OPTIONS = yaml.safe_load((ROOT / "salt" / "core" / "files" / "minion.conf").read_text())


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
            **MINION_OPTIONS,
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
            # As SaltCluster's daemons (harness/salt_cluster.py): grains computed once, not per salt-call.
            "grains_cache": True,
        }
        (self.config_dir / "minion").write_text(yaml.safe_dump(config))

    def call(self, *args: str):
        """``salt-call --local ARGS --out=json`` (harness.salt_commands), returning the parsed ``local`` result."""
        result = salt_commands.run(
            "salt-call", "--local", f"--config-dir={self.config_dir}", "--out=json", *args, env=self.env, timeout=300
        )
        assert result.returncode == 0, f"salt-call {' '.join(args)} failed:\n{result.stderr}{result.stdout}"
        return json.loads(result.stdout)["local"]

    def call_error(self, function: str, *args: str) -> str:
        """``salt-call --local FUNCTION ARGS`` that must fail: the error its module raised, as salt-call prints it."""
        result = salt_commands.run(
            "salt-call",
            "--local",
            f"--config-dir={self.config_dir}",
            "--out=json",
            function,
            *args,
            env=self.env,
            timeout=300,
        )
        assert result.returncode != 0, f"salt-call {function} {' '.join(args)} succeeded:\n{result.stdout}"
        # salt/cli/caller.py: "Error running '<function>': <the exception's message>" on stderr.
        prefix = f"Error running '{function}': "
        return result.stderr[result.stderr.rindex(prefix) + len(prefix) :].strip()
