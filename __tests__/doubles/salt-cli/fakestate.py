"""
What the fake Salt programs share: one JSON state file ($FAKE_SALT_STATE), read and written under
a lock because several fakes run at once (state.event beside state.orchestrate), an argv log
($FAKE_SALT_LOG, one JSON list per invocation) and the fake event bus, a file of
"<tag>\\t<json>" lines beside the state file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path


def state_path() -> Path:
    return Path(os.environ["FAKE_SALT_STATE"])


def bus_path() -> Path:
    return state_path().with_name("bus.txt")


@contextlib.contextmanager
def state() -> Iterator[dict]:
    """The state, locked for this block; changes to the dict are saved at its end, sys.exit too."""
    path = state_path()
    with path.with_suffix(".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = json.loads(path.read_text())
        try:
            yield data
        finally:
            # Written beside it and renamed over it: a fake killed mid-save (a script's `timeout`
            # on a loaded machine) leaves the old state or the new one, never a truncated file.
            saving = path.with_name(f".{path.name}.{os.getpid()}")
            saving.write_text(json.dumps(data, indent=2))
            saving.replace(path)


def log_invocation(program: str) -> None:
    with open(os.environ["FAKE_SALT_LOG"], "a") as log:
        log.write(json.dumps([program, *sys.argv[1:]]) + "\n")


def fire_event(tag: str, data: dict | str) -> None:
    """Appends one event to the bus; ``data`` may be the JSON text of a captured event."""
    payload = data if isinstance(data, str) else json.dumps(data)
    with state():  # the lock keeps concurrent writers' lines whole
        with bus_path().open("a") as bus:
            bus.write(f"{tag}\t{payload}\n")


def ping(current: dict, targeted: list[str]) -> list[str]:
    """
    One test.ping of ``targeted`` (salt's, or manage.status's), counted in the state: the minions
    that answer it, those whose "ping" entry names this call or an earlier one.
    """
    current["ping_calls"] = current.get("ping_calls", 0) + 1
    answering = current.get("ping", {})
    return [minion for minion in targeted if minion in answering and current["ping_calls"] >= answering[minion]]
