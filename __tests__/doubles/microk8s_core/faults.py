"""
What a test injects into a node of either fake: fake/faults.json below the node's $SNAP_DATA, a
JSON object. A count (``"join_dqlite_error": 2``) is spent one use at a time and its key removed
at 0 (``spend``); any other key is a setting the node reads as it is (``setting``). Each fake's
docstring lists the faults it reads.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

from .layout import read_json, write_json

FAULTS = Path("fake/faults.json")
# A lock of its own: a fake may already hold its others (an agent's, a database's) when it spends one.
LOCK = Path("fake/.faults.lock")
# The not-ready window after a snap refresh, a kubelite restart or a boot, unless set.
RESTART_SECONDS = 2


def spend(snap_data: Path, name: str) -> dict | None:
    """Spends one use of fault ``name``: the faults (its other keys are read with it), or None when unset."""
    path = snap_data / FAULTS
    path.parent.mkdir(parents=True, exist_ok=True)
    with (snap_data / LOCK).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        faults = read_json(path, {})
        if int(faults.get(name, 0)) <= 0:
            return None
        faults[name] = int(faults[name]) - 1
        if faults[name] == 0:
            del faults[name]
        write_json(path, faults)
    return faults


def setting(snap_data: Path, name: str, default):
    return read_json(snap_data / FAULTS, {}).get(name, default)


def restart_seconds(snap_data: Path) -> float:
    return float(setting(snap_data, "restart_seconds", RESTART_SECONDS))
