"""The provisioner tests' fixtures; the harness they use is the shared package __tests__/harness."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.provisioners import Fakes


@pytest.fixture
def fakes(tmp_path: Path) -> Fakes:
    return Fakes(tmp_path / "fakes")
