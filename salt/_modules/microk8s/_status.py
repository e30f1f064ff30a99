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
# What the wrappers print instead of running on a node joined with --worker (its
# var/lock/clustered.lock exists), exit 0, whitespace folded: microk8s-status.wrapper (1.28 and
# 1.35 alike) and microk8s-kubectl.wrapper (1.28 and 1.35 alike).
WORKER_MESSAGES = (
    "This MicroK8s deployment is acting as a node in a cluster. Please use the control plane node.",
    "This MicroK8s deployment is acting as a node in a cluster. Please use the microk8s kubectl on the master.",
)


def is_worker_message(text: str) -> bool:
    """True when ``text`` is exactly what a wrapper prints on a --worker node, and nothing else."""
    return " ".join(text.split()) in WORKER_MESSAGES


def _without_status(running: bool | None, message: str, worker: bool = False) -> dict:
    return {
        "running": running,
        "worker": worker,
        "high_availability": {"enabled": False, "nodes": []},
        "addons": {},
        "message": message,
    }


def worker_node(message: str = WORKER_MESSAGES[0]) -> dict:
    """The status of a worker node, where microk8s refuses to report one: running is unknown."""
    return _without_status(None, " ".join(message.split()), worker=True)


def _unexpected(what: str, text: str) -> CommandExecutionError:
    return CommandExecutionError(f"unexpected microk8s status ({what}): {text[:200]!r}")


def _addons(raw, text: str) -> dict:
    """
    status.py's list of ``{name, description, version, status}`` (1.18 and later), or the
    ``{name: status}`` map microk8s-status.wrapper printed before status.py existed (1.16).
    """
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return {str(name): {"status": status, "description": None, "version": None} for name, status in raw.items()}
    if not isinstance(raw, list) or not all(isinstance(a, dict) and "name" in a for a in raw):
        raise _unexpected("addons", text)
    return {
        str(a["name"]): {
            "status": a.get("status"),
            "description": a.get("description"),
            "version": str(a.get("version")),
        }
        for a in raw
    }


def parse(text: str) -> dict:
    """
    ``{"running": bool, "worker": False, "high_availability": {"enabled": bool, "nodes": [{"address", "role"}]},
    "addons": {name: {"status", "description", "version"}}, "message": str | None}``

    What microk8s prints instead of a status is recognised too: on a node joined with --worker
    the status wrapper's message (exit 0), and on a stopped node exit_if_stopped's (exit 0). A
    running node that is not ready prints valid YAML with a message. ``nodes`` is empty while HA
    is enabled when dqlite did not answer status.py in time (common/utils.py get_dqlite_info
    gives up after ten tries and lists nobody): that is not a node of its own, see
    ``_membership.membership``. Anything else is a CommandExecutionError, never a TypeError.
    """
    if is_worker_message(text):
        return worker_node(text)
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        raise CommandExecutionError(f"unparsable microk8s status: {error}") from error
    if isinstance(raw, str) and NOT_RUNNING in raw:
        return _without_status(False, raw.strip())
    if not isinstance(raw, dict) or "microk8s" not in raw:
        # Every status.py (and 1.16's wrapper) starts with the microk8s mapping.
        raise _unexpected("no microk8s mapping", text)
    node = raw.get("microk8s") or {}
    ha = raw.get("high-availability") or {}
    if not isinstance(node, dict) or not isinstance(ha, dict):
        raise _unexpected("microk8s and high-availability must be mappings", text)
    listed = ha.get("nodes") or []
    if not isinstance(listed, list) or not all(isinstance(n, dict) and n.get("address") for n in listed):
        raise _unexpected("high-availability nodes", text)
    return {
        "running": node.get("running") is True,
        "worker": False,
        "high_availability": {
            "enabled": ha.get("enabled") is True,
            "nodes": [{"address": str(n["address"]), "role": str(n.get("role"))} for n in listed],
        },
        "addons": _addons(raw.get("addons"), text),
        # status.py print_yaml puts the not-ready message under high-availability.
        "message": node.get("message") or ha.get("message"),
    }


def status(salt: dict) -> dict:
    """
    The parsed status. On a worker node, which has none, ``worker_node()``'s: known by
    microk8s' own test (its lock file), not by running status and reading what it says.
    """
    from . import _cli

    if is_worker(salt):
        return worker_node()
    return parse(_cli.run(salt, "status", "--format", "yaml"))


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
