"""
snapd's side of the microk8s snap for both fake microk8s programs (this package's __init__.py
names them): refresh holds, the auto-refresh they stop, and the conflict with a change in
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
  command prints as "error: <message>" and exits 1;
- every operation is a change with an id, its kind and summary (overlord/snapstate/snapstate.go:
  a refresh's is `Refresh "microk8s" snap from "<channel>" channel`); `snap refresh ... --no-wait`
  starts it and prints only its id (cmd/snap/wait.go, waitMixin.wait: "Do not wait for the
  operation to finish but just print the change id"); `snap watch ID` waits for the change and
  exits 0 once it is done, or prints "error: cannot perform the following tasks:" with each
  failed task's summary and error and exits 1 (cmd/snap/cmd_watch.go, wait.go; client/change.go
  Change.Err), and "error: cannot find change with id "ID"" for an id snapd does not know
  (daemon/api_changes.go); `snap watch --last=KIND?` waits for the last change of that kind, and
  with the "?" returns at once when there is none (cmd_watch.go, the option's help; lastChange);
- a failed change is undone: the snap keeps the revision and channel it had (snapstate's undo
  handlers). A fake's changes finish at once; the services' restart after them is each fake's;
- ``snap install microk8s --channel=...`` and ``snap refresh microk8s --channel=...``
  (cmd/snap/cmd_snap_op.go): "microk8s (<channel>) v<version> from Canonical✓ installed" (or
  refreshed), 'snap "microk8s" is already installed', 'snap "microk8s" has no updates available';
- ``snap list microk8s`` (cmd/snap/cmd_list.go outputSnapsDefault): Name Version Rev Tracking
  Publisher Notes;
- ``snap restart microk8s.daemon-kubelite`` (cmd/snap/cmd_services.go: it waits for the change,
  then prints "Restarted."), which microk8s' restart_service runs after a kubelet, API server,
  scheduler or controller-manager argument change (actions/common/utils.sh); kubelite starts again
  and reads its arguments files;
- after a refresh, a restart of kubelite, an auto-refresh or a boot the snap's services start
  over: not ready for a while (``restart``), in which status.py prints print_yaml(isReady=False)
  and exits 1 and kubectl's connection is refused.
"""

from __future__ import annotations

import time

FIRST_REVISION = 7000
CONFLICT = 'error: snap "microk8s" has "auto-refresh" change in progress'
# The one service `snap restart` is reproduced for (snapd's app name).
KUBELITE = "microk8s.daemon-kubelite"
ALREADY_INSTALLED = 'snap "microk8s" is already installed'
NO_UPDATES = 'snap "microk8s" has no updates available'


def channel(args: list[str]) -> str | None:
    """The ``--channel=`` of ``snap ARGS``, if any."""
    return next((a.split("=", 1)[1] for a in args if a.startswith("--channel=")), None)


def no_wait(args: list[str]) -> tuple[bool, list[str]]:
    """``--no-wait`` (cmd/snap/wait.go): whether ``snap ARGS`` has it, and its other arguments."""
    return "--no-wait" in args, [a for a in args if a != "--no-wait"]


def installed(channel: str, version: str) -> str:
    return f"microk8s ({channel}) v{version} from Canonical✓ installed"


def refreshed(channel: str, version: str) -> str:
    return f"microk8s ({channel}) v{version} from Canonical✓ refreshed"


def listing(state: dict, version: str, tracking_width: int) -> str:
    """
    ``snap list microk8s``. snapd's tabwriter pads each column to its widest cell and two spaces:
    each fake pads Tracking for its own default channel (``tracking_width``), and its row by two.
    """
    header = f"Name      Version   Rev   {'Tracking'.ljust(tracking_width)}Publisher   Notes"
    return f"{header}\nmicrok8s  v{version}  {revision(state)}  {state['channel']}  canonical✓  {notes(state)}"


def restart_services(state: dict, services: list[str], seconds: float) -> tuple[int, str, str]:
    """``snap restart SERVICES``, for kubelite only: ``(exit code, stdout, stderr)``."""
    if services != [KUBELITE]:
        return 2, "", f"fake snap: restart {' '.join(services)} is not reproduced\n"
    restart(state, seconds)
    return 0, "Restarted.\n", ""


def restart(state: dict, seconds: float) -> None:
    """The snap's services start over: not ready for ``seconds``."""
    state["restart_until"] = time.time() + seconds


def restarting(state: dict) -> bool:
    return time.time() < state["restart_until"]


def start_change(state: dict, kind: str, summary: str, error: str | None = None) -> str:
    """Records a change of microk8s (done, or failed with ``error``, a task's summary and error); its id."""
    number = int(state.get("change_seq", 0)) + 1
    state["change_seq"] = number
    state.setdefault("changes", {})[str(number)] = {"kind": kind, "summary": summary, "error": error}
    return str(number)


def refused(state: dict) -> str:
    """A change refused because another one runs (recorded, for `snap watch --last`): the error to print."""
    start_change(state, "auto-refresh", 'Auto-refresh snap "microk8s"')
    return CONFLICT


def refresh_summary(channel: str) -> str:
    return f'Refresh "microk8s" snap from "{channel}" channel'


def start_failure(state: dict) -> str:
    """The failed task of a refresh whose new revision's services do not start (the ``refresh_fails`` fault)."""
    return f'Start snap "microk8s" ({revision(state) + 1}) services (the fake\'s refresh_fails)'


def change_failed(error: str) -> str:
    """What `snap watch` (or a refresh that waits) prints for a failed change (client/change.go Change.Err)."""
    return f"error: cannot perform the following tasks:\n- {error}\n"


def watch(state: dict, args: list[str]) -> tuple[int, str, str]:
    """``snap watch ID`` or ``snap watch --last=KIND[?]`` (``args`` after "snap"): ``(exit code, stdout, stderr)``."""
    changes = state.get("changes", {})
    if len(args) != 2:
        return 2, "", f"fake snap: {' '.join(args)} is not reproduced\n"
    if args[1].startswith("--last="):
        kind = args[1][len("--last=") :]
        optional = kind.endswith("?")
        kind = kind.rstrip("?")
        found = [number for number, change in changes.items() if change["kind"] == kind]
        if not found:
            return (0, "", "") if optional else (1, "", f'error: no changes of type "{kind}" found\n')
        change = changes[max(found, key=int)]
    elif args[1] in changes:
        change = changes[args[1]]
    else:
        return 1, "", f'error: cannot find change with id "{args[1]}"\n'
    return (1, "", change_failed(change["error"])) if change["error"] else (0, "", "")


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
    restart(state, restart_seconds)
    return True
