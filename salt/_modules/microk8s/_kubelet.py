"""
kubelite's arguments: the kubelet's ``--cloud-provider`` in $SNAP_DATA/args/kubelet, the API
server's ``--advertise-address`` in $SNAP_DATA/args/kube-apiserver, and kubelite's restart that
makes a change take effect.

microk8s keeps each component's arguments one a line in such a file and kubelite reads them only
when it starts (microk8s-resources/default-args/kubelite: ``--kubelet-args-file``,
``--apiserver-args-file``); microk8s' own scripts change an argument and then restart the service
(microk8s-resources/actions/common/utils.sh restart_service: ``snapctl restart
microk8s.daemon-kubelite`` for the kubelet and the API server). Outside the snap the same is
``snap restart microk8s.daemon-kubelite`` (snapd's cmd/snap cmd_services.go).
"""

from __future__ import annotations

import time

from salt.exceptions import CommandExecutionError

from . import _cli, _status
from . import _constants as constants


def _flag(line: str) -> str:
    """The flag of an arguments line (``--flag=value`` or ``--flag value``)."""
    return line.strip().split("=", 1)[0].split(None, 1)[0] if line.strip() else ""


def _path(salt: dict, name: str) -> str:
    path = _cli.snap_path(salt, name)
    if not salt["file.file_exists"](path):
        raise CommandExecutionError(f"{path} does not exist: microk8s writes it at install")
    return path


def argument(salt: dict, name: str, flag: str) -> str | None:
    """The value of ``flag``'s line (the first one) in the arguments file ``name``, or None without one."""
    for line in salt["file.read"](_path(salt, name)).splitlines():
        if _flag(line) == flag:
            text = line.strip()[len(flag) :].lstrip("= \t")
            return text.strip("\"'")
    return None


def set_argument(salt: dict, name: str, flag: str, value: str | None) -> dict:
    """
    Makes the arguments file ``name`` carry exactly one ``flag=value`` line, or none for ``value``
    None, keeping every other line as it is. Returns ``{"changed", "old", "new"}`` (the flag's
    values, None for no line). Does not restart kubelite.
    """
    path = _path(salt, name)
    lines = salt["file.read"](path).splitlines()
    kept = [line for line in lines if _flag(line) != flag]
    new_lines = kept if value is None else [*kept, f"{flag}={value}"]
    old = argument(salt, name, flag)
    if new_lines == lines:
        return {"changed": False, "old": old, "new": old}
    salt["file.write"](path, "\n".join(new_lines))
    return {"changed": True, "old": old, "new": value}


def cloud_provider(salt: dict) -> str | None:
    """The value of the kubelet's ``--cloud-provider`` line (the first one), or None without one."""
    return argument(salt, constants.KUBELET_ARGS, constants.CLOUD_PROVIDER_FLAG)


def set_external_cloud_provider(salt: dict, external: bool) -> dict:
    """
    Makes the kubelet's arguments carry exactly one ``--cloud-provider=external`` line
    (``external``) or none; see set_argument.
    """
    value = constants.EXTERNAL if external else None
    return set_argument(salt, constants.KUBELET_ARGS, constants.CLOUD_PROVIDER_FLAG, value)


def advertise_address(salt: dict) -> str | None:
    """The API server's ``--advertise-address``, or None without one (the default route's address)."""
    return argument(salt, constants.APISERVER_ARGS, constants.ADVERTISE_ADDRESS_FLAG)


def set_advertise_address(salt: dict, address: str) -> dict:
    """Makes the API server's arguments carry exactly one ``--advertise-address=<address>``; see set_argument."""
    return set_argument(salt, constants.APISERVER_ARGS, constants.ADVERTISE_ADDRESS_FLAG, address)


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
