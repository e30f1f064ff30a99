"""Shared fixtures: a masterless Salt minion confined to a temporary directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

VENV_BIN = Path(sys.executable).parent


class LocalMinion:
    """Runs the venv's real `salt-call --local` against a file_roots tree of our choosing."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.file_root = root / "srv" / "salt"
        self.pillar_root = root / "srv" / "pillar"
        self.config_dir = root / "etc" / "salt"
        for directory in (self.file_root, self.pillar_root, self.config_dir):
            directory.mkdir(parents=True)
        (self.config_dir / "minion").write_text(
            "\n".join(
                [
                    "id: test-minion.kube-on-os",
                    "file_client: local",
                    f"root_dir: {root}",
                    f"cachedir: {root / 'cache'}",
                    f"pki_dir: {root / 'pki'}",
                    f"sock_dir: {root / 'sock'}",
                    f"log_file: {root / 'minion.log'}",
                    "file_roots: {base: [" + str(self.file_root) + "]}",
                    "pillar_roots: {base: [" + str(self.pillar_root) + "]}",
                    "",
                ]
            )
        )

    def call(self, *args: str) -> dict:
        """`salt-call --local ARGS --out=json`, returning the parsed `local` result."""
        result = subprocess.run(
            [str(VENV_BIN / "salt-call"), "--local", f"--config-dir={self.config_dir}", "--out=json", *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert result.returncode == 0, f"salt-call {' '.join(args)} failed:\n{result.stderr}{result.stdout}"
        return json.loads(result.stdout)["local"]


@pytest.fixture
def minion(tmp_path: Path) -> LocalMinion:
    return LocalMinion(tmp_path)
