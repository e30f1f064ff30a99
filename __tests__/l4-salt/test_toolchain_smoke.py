"""The Python half of the toolchain works: the pinned Salt renders states, cloud-init validates."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import salt.version

REQUIREMENTS = Path(__file__).resolve().parents[2] / "scripts" / "toolchain" / "requirements.txt"


def pinned(package: str) -> str:
    match = re.search(rf"^{re.escape(package)}==(\S+)$", REQUIREMENTS.read_text(), re.MULTILINE)
    assert match, f"{package} is not pinned in {REQUIREMENTS}"
    return match.group(1)


def test_salt_is_the_pinned_release() -> None:
    assert salt.version.__version__ == pinned("salt")


def test_salt_renders_jinja_and_yaml_into_a_highstate(minion) -> None:
    (minion.file_root / "top.sls").write_text("base:\n  '*':\n    - hello\n")
    (minion.file_root / "hello.sls").write_text(
        "{% set greeting = pillar.get('greeting', 'hello') %}\n"
        "hello-file-managed:\n"
        "  file.managed:\n"
        "    - name: /tmp/{{ greeting }}\n"
        "    - contents: {{ grains['id'] }}\n"
    )
    (minion.pillar_root / "top.sls").write_text("base:\n  '*':\n    - greeting\n")
    (minion.pillar_root / "greeting.sls").write_text("greeting: salut\n")

    highstate = minion.call("state.show_highstate")

    state = highstate["hello-file-managed"]
    assert state["__sls__"] == "hello"
    assert {"name": "/tmp/salut"} in state["file"]
    assert {"contents": "test-minion.kube-on-os"} in state["file"]


def cloud_init_schema(config: str, tmp_path: Path) -> subprocess.CompletedProcess:
    validator = os.environ.get("KOO_CLOUD_INIT_SCHEMA")
    assert validator, "KOO_CLOUD_INIT_SCHEMA is not set: run these tests through `npm test`"
    path = tmp_path / "user-data.yaml"
    path.write_text(config)
    return subprocess.run([validator, str(path)], capture_output=True, text=True, check=False, timeout=120)


def test_cloud_init_accepts_a_valid_cloud_config(tmp_path: Path) -> None:
    result = cloud_init_schema("#cloud-config\nruncmd:\n  - [echo, ready]\n", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Valid cloud-config" in result.stdout


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ("runcmd: 5", "runcmd: 5 is not of type 'array'"),
        ("write_files: [{path: 1, content: x}]", "write_files.0.path: 1 is not of type 'string'"),
    ],
)
def test_cloud_init_rejects_a_wrongly_typed_key(config: str, error: str, tmp_path: Path) -> None:
    result = cloud_init_schema(f"#cloud-config\n{config}\n", tmp_path)
    assert result.returncode != 0
    assert error in result.stdout + result.stderr
