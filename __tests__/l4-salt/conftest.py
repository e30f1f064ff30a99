"""The Salt tests' fixtures; the harness they use is the shared package __tests__/harness."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from harness.salt_minion import ROOT, LocalMinion


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
