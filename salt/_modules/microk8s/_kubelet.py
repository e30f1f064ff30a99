"""
The kubelet's ``--cloud-provider`` in $SNAP_DATA/args/kubelet, and kubelite's restart that makes
a change take effect.

microk8s keeps the kubelet's arguments one a line in that file and kubelite reads it only when it
starts (microk8s-resources/default-args/kubelite: ``--kubelet-args-file``); microk8s' own scripts
change an argument and then restart the service (microk8s-resources/actions/common/utils.sh
restart_service: ``snapctl restart microk8s.daemon-kubelite`` for the kubelet). Outside the snap
the same is ``snap restart microk8s.daemon-kubelite`` (snapd's cmd/snap cmd_services.go).
"""

from __future__ import annotations

import time

from salt.exceptions import CommandExecutionError

from . import _cli, _status
from . import _constants as constants


def _flag(line: str) -> str:
    """The flag of an arguments line (``--flag=value`` or ``--flag value``)."""
    return line.strip().split("=", 1)[0].split(None, 1)[0] if line.strip() else ""


def _path(salt: dict) -> str:
    path = _cli.snap_path(salt, constants.KUBELET_ARGS)
    if not salt["file.file_exists"](path):
        raise CommandExecutionError(f"{path} does not exist: microk8s writes it at install")
    return path


def cloud_provider(salt: dict) -> str | None:
    """The value of the kubelet's ``--cloud-provider`` line (the first one), or None without one."""
    for line in salt["file.read"](_path(salt)).splitlines():
        if _flag(line) == constants.CLOUD_PROVIDER_FLAG:
            text = line.strip()[len(constants.CLOUD_PROVIDER_FLAG) :].lstrip("= \t")
            return text.strip("\"'")
    return None


def set_external_cloud_provider(salt: dict, external: bool) -> dict:
    """
    Makes the arguments file carry exactly one ``--cloud-provider=external`` line (``external``)
    or none, keeping every other line as it is. Returns ``{"changed", "old", "new"}`` (values of
    ``--cloud-provider``, None for no line). Does not restart kubelite.
    """
    path = _path(salt)
    text = salt["file.read"](path)
    lines = text.splitlines()
    kept = [line for line in lines if _flag(line) != constants.CLOUD_PROVIDER_FLAG]
    wanted = f"{constants.CLOUD_PROVIDER_FLAG}={constants.EXTERNAL}"
    new_lines = [*kept, wanted] if external else kept
    old = cloud_provider(salt)
    if new_lines == lines:
        return {"changed": False, "old": old, "new": old}
    salt["file.write"](path, "\n".join(new_lines))
    return {"changed": True, "old": old, "new": constants.EXTERNAL if external else None}


def restart_kubelite(salt: dict, timeout: int = constants.DEFAULT_TIMEOUT) -> bool:
    """
    ``snap restart microk8s.daemon-kubelite``, then waits until the node is back: a control-plane
    node by ``status --wait-ready`` (as microk8s.running waits after a start), a worker, which has
    no status of its own, until its kubelite service runs again. Raises CommandExecutionError on
    a failed restart or when ``timeout`` seconds pass.
    """
    result = salt["cmd.run_all"](
        [constants.SNAP, "restart", constants.KUBELITE_APP],
        python_shell=False,
        timeout=timeout,
        ignore_retcode=True,
    )
    if result.get("retcode", 1) != 0:
        output = (result.get("stderr") or result.get("stdout") or "").strip()
        raise CommandExecutionError(f"snap restart {constants.KUBELITE_APP} failed: {output or 'no output'}")
    if not _status.is_worker(salt):
        return _status.wait_ready(salt, timeout)
    deadline = time.monotonic() + timeout
    while not _status.is_running(salt):
        if time.monotonic() >= deadline:
            raise CommandExecutionError(f"{constants.KUBELITE_SERVICE} did not run again within {timeout} seconds")
        time.sleep(constants.KUBELITE_POLL_INTERVAL)
    return True
