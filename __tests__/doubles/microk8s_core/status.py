"""
``microk8s status`` and the wrappers' refusals (canonical/microk8s; the same in 1.28 and 1.35:
scripts/wrappers/status.py has no diff between them):
- status.py print_yaml, column for column (Python's True/False included): ``microk8s.running``
  (is_cluster_ready, which needs the API server and its datastore's quorum), then
  ``high-availability``: ``enabled`` is common/utils.py is_ha_enabled(), the ha-cluster addon, and
  while it is on every dqlite member with its role (get_dqlite_info, [] once its dqlite query
  failed its 10 tries); when not ready the message under it, after which status.py exits 1 (`if
  not is_ready: sys.exit(1)`); when ready, the addons;
- microk8s-resources/wrappers/microk8s-status.wrapper on a node joined with --worker, before
  status.py runs: that the node is part of a cluster and to use the control plane node, exit 0;
- common/utils.py exit_if_stopped (status: stdout, exit 0) and ensure_started (the other
  commands: stderr, exit 1) on a stopped node; is_cluster_locked, which enable.py, disable.py and
  other wrappers call first on a worker (exit 1).
"""

from __future__ import annotations

from collections.abc import Iterable

NOT_RUNNING = "microk8s is not running. Use microk8s inspect for a deeper inspection."
STOPPED = "microk8s is not running, try microk8s start"
WORKER = "This MicroK8s deployment is acting as a node in a cluster.\nPlease use the control plane node."
WORKER_LOCKED = "This MicroK8s deployment is acting as a node in a cluster.\nPlease use the master node."


def print_yaml(
    ready: bool,
    ha_enabled: bool,
    members: list[dict],
    addons: Iterable[tuple[str, str]],
    version: str,
    repository: str | None = None,
) -> None:
    """
    status.py print_yaml: ``members`` the dqlite members listed, ``addons`` (name, status) in the
    order printed, each with its ``repository`` when given. The caller chooses the exit code.
    """
    print(f"microk8s:\n  running: {ready}\nhigh-availability:\n  enabled: {ha_enabled}")
    if ha_enabled:
        print("  nodes:")
        for member in members:
            print(f"    - address: {member['address']}\n      role: {member['role']}")
    if not ready:
        print(f"  message: {NOT_RUNNING}")
        return
    print("addons:")
    for name, addon_status in addons:
        source = f"    repository: {repository}\n" if repository else ""
        print(f"  - name: {name}\n{source}    description: {name}\n    version: {version}\n    status: {addon_status}")


def enabled_first(addons: dict[str, str]) -> list[tuple[str, str]]:
    """The addons as status.py lists them: the enabled ones, then the disabled, each by name."""
    return [(name, wanted) for wanted in ("enabled", "disabled") for name, s in sorted(addons.items()) if s == wanted]
