"""Parsing of ``microk8s status --format yaml`` (see microk8s' scripts/wrappers/status.py)."""

from __future__ import annotations

import yaml
from salt.exceptions import CommandExecutionError

NOT_RUNNING = "microk8s is not running"
# What status prints (exit 1) on a node that joined as a worker: only the control plane knows.
WORKER_NODE = "acting as a node in a cluster"


def _without_status(running: bool | None, message: str, worker: bool = False) -> dict:
    return {
        "running": running,
        "worker": worker,
        "high_availability": {"enabled": False, "nodes": []},
        "addons": {},
        "message": message,
    }


def worker_node(message: str) -> dict:
    """The status of a worker node, where microk8s refuses to report one: running is unknown."""
    return _without_status(None, " ".join(message.split()), worker=True)


def parse(text: str) -> dict:
    """
    ``{"running": bool, "worker": False, "high_availability": {"enabled": bool, "nodes": [{"address", "role"}]},
    "addons": {name: {"status", "description", "version"}}, "message": str | None}``

    A stopped microk8s prints its message one column off, which is not valid YAML; that case is
    recognised by the message rather than failing.
    """
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        for line in text.splitlines():
            if NOT_RUNNING in line:
                return _without_status(False, line.split("message:", 1)[-1].strip())
        raise CommandExecutionError(f"unparsable microk8s status: {error}") from error
    if not isinstance(raw, dict):
        raise CommandExecutionError(f"unexpected microk8s status: {text[:200]!r}")
    running = (raw.get("microk8s") or {}).get("running") is True
    ha = raw.get("high-availability") or {}
    nodes = [{"address": str(n.get("address")), "role": str(n.get("role"))} for n in ha.get("nodes") or []]
    addons = {
        str(a["name"]): {
            "status": a.get("status"),
            "description": a.get("description"),
            "version": str(a.get("version")),
        }
        for a in raw.get("addons") or []
    }
    return {
        "running": running,
        "worker": False,
        "high_availability": {"enabled": ha.get("enabled") is True, "nodes": nodes},
        "addons": addons,
        "message": (raw.get("microk8s") or {}).get("message"),
    }


def voters(parsed: dict) -> list[str]:
    """Addresses of the dqlite voters: the control plane that decides the cluster."""
    return [n["address"] for n in parsed["high_availability"]["nodes"] if n["role"] == "voter"]
