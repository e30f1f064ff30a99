"""
snapd's side of the microk8s snap for both fake microk8s programs (the rehearsal's microk8s.py
beside this file, which install.sh installs with it, and the L4 one, __tests__/doubles/microk8s/
fake_microk8s.py): refresh holds, the auto-refresh they stop, and the conflict with a change in
progress. Each fake keeps a node's state and passes it in; ``state["held"]`` is the hold and
``state["revision"]`` the installed revision.

Where each behaviour comes from (canonical/snapd):
- ``snap refresh --hold[=forever] microk8s`` and ``snap refresh --unhold microk8s``
  (cmd/snapd/cli/cmd_snap_op.go holdRefreshes, unholdRefreshes): "General refreshes of
  "microk8s" held indefinitely", "Removed general refresh hold of "microk8s""; a hold on a named
  snap stops its auto-refreshes and general refreshes (`snap refresh` with no snap named), never a
  refresh that names it (the command's help; tests/main/snap-refresh-hold);
- ``snap list``'s notes: "classic", then "held" while held, joined by "," (cmd/snapd/cli/notes.go);
- auto-refresh (overlord/snapstate/autorefresh.go): up to four times a day, snapd refreshes every
  snap not held to the newest revision of the channel it tracks; the snap's services restart;
- a change to a snap while another change of it runs is refused (overlord/snapstate/conflict.go
  ChangeConflictError: `snap "microk8s" has "auto-refresh" change in progress`), which the snap
  command prints as "error: <message>" and exits 1.
"""

from __future__ import annotations

import time

FIRST_REVISION = 7000
CONFLICT = 'error: snap "microk8s" has "auto-refresh" change in progress'


def is_hold_command(args: list[str]) -> bool:
    """Whether ``snap ARGS`` sets or lifts a hold."""
    return args[:1] == ["refresh"] and any(a == "--unhold" or a.startswith("--hold") for a in args)


def hold(state: dict, args: list[str]) -> tuple[int, str, str]:
    """``snap refresh --hold|--unhold microk8s`` (``args`` after "snap"): ``(exit code, stdout, stderr)``."""
    flag = next((a for a in args[1:] if a.startswith("--hold") or a == "--unhold"), None)
    if [a for a in args[1:] if a != flag] != ["microk8s"] or flag not in ("--hold", "--hold=forever", "--unhold"):
        return 2, "", f"fake snap: {' '.join(args)} is not reproduced\n"
    state["held"] = flag != "--unhold"
    if state["held"]:
        return 0, 'General refreshes of "microk8s" held indefinitely\n', ""
    return 0, 'Removed general refresh hold of "microk8s"\n', ""


def notes(state: dict) -> str:
    """The Notes column of ``snap list`` for microk8s (a classic snap)."""
    return "classic,held" if state.get("held") else "classic"


def revision(state: dict) -> int:
    return int(state.get("revision", FIRST_REVISION))


def auto_refresh(state: dict, restart_seconds: float) -> bool:
    """
    snapd's auto-refresh of microk8s: unless held, a newer revision of the tracked channel, whose
    services restart (not ready for ``restart_seconds``). Whether it refreshed.
    """
    if state.get("held"):
        return False
    state["revision"] = revision(state) + 1
    state["restart_until"] = time.time() + restart_seconds
    return True
