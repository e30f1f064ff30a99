"""
The node's own status: ``microk8s status --format yaml`` parsed (see microk8s'
scripts/wrappers/status.py), whether it runs, starting it and waiting for it.

The functions that run microk8s import their siblings on use, not at the top: the rehearsal's
tests import this file on its own for its parser, where a relative import would fail.
"""

from __future__ import annotations

import yaml
from salt.exceptions import CommandExecutionError

NOT_RUNNING = "microk8s is not running"
# What status prints (exit 0, microk8s-status.wrapper) on a node that joined as a worker: only the
# control plane knows.
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

    What microk8s 1.28 prints instead of a status is recognised too: on a node joined with
    --worker the status wrapper's message (exit 0), and on a stopped node exit_if_stopped's
    (exit 0). A running node that is not ready prints valid YAML with a message.
    """
    if WORKER_NODE in text:
        return worker_node(text)
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise CommandExecutionError(f"unparsable microk8s status: {error}") from error
    if isinstance(raw, str) and NOT_RUNNING in raw:
        return _without_status(False, raw.strip())
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
        # status.py print_yaml puts the not-ready message under high-availability.
        "message": (raw.get("microk8s") or {}).get("message") or ha.get("message"),
    }


def status(salt: dict) -> dict:
    """The parsed status; on a worker node, which has none, ``worker_node()``'s."""
    from . import _cli

    try:
        return parse(_cli.run(salt, "status", "--format", "yaml"))
    except CommandExecutionError as error:
        if WORKER_NODE in str(error):
            return worker_node(_cli.output_of(error))
        raise


def is_worker(salt: dict) -> bool:
    """True on a node that joined a cluster as a worker (microk8s' worker lock file exists)."""
    from . import _cli, _constants

    return bool(salt["file.file_exists"](_cli.snap_path(salt, _constants.WORKER_LOCK)))


def is_running(salt: dict) -> bool:
    """By the status, or on a worker (which has none) by its kubelite service."""
    from . import _constants

    if is_worker(salt):
        return bool(salt["service.status"](_constants.KUBELITE_SERVICE))
    try:
        return status(salt)["running"] is True
    except CommandExecutionError:
        return False


def start(salt: dict) -> str:
    from . import _cli

    return _cli.run(salt, "start")


def wait_ready(salt: dict, timeout: int) -> bool:
    """``status --wait-ready``, given 30 seconds more than microk8s' own ``timeout``."""
    from . import _cli

    _cli.run(salt, "status", "--wait-ready", "--timeout", str(timeout), timeout=timeout + 30)
    return True
