"""
The two microk8s releases both fakes reproduce, canonical/microk8s branches 1.28 and 1.35. A node
tracks a channel ``1.NN/<risk>``; what differs between the releases follows the node's (the join's
texts and the agent's errors: join.py). Any other channel (the rehearsal's ``latest/stable``) is
taken as 1.28; status is the same in both (scripts/wrappers/status.py has no diff 1.28..1.35).
"""

from __future__ import annotations

import re

RISKS = ("stable", "candidate", "beta", "edge")
# The release any channel but 1.NN/<risk> is taken as.
DEFAULT_MINOR = 28
# The patch release a track's channel is taken to carry; other tracks get .0.
PATCH = {28: "1.28.15"}
DEFAULT_VERSION = PATCH[DEFAULT_MINOR]


def release(channel: str | None) -> int | None:
    """The minor version a channel 1.NN/<risk> tracks; None for any other (latest/...)."""
    match = re.fullmatch(r"1\.(\d+)/(\w+)", channel or "")
    return int(match.group(1)) if match and match.group(2) in RISKS else None


def minor(state: dict) -> int:
    """The minor version of the release a node (``state["channel"]``) runs."""
    return release(state["channel"]) or DEFAULT_MINOR


def version(state: dict) -> str:
    return PATCH.get(minor(state), f"1.{minor(state)}.0")
