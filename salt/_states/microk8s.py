"""
State module for microk8s, over the ``microk8s`` execution module. Each state checks first: when
the node is already right it reports ``result=True`` with no changes (in test mode too); in test
mode it reports ``result=None`` with the changes it would make; otherwise it acts and reports
``{"old": ..., "new": ...}``.
"""

from __future__ import annotations

from salt.exceptions import CommandExecutionError

__virtualname__ = "microk8s"


def __virtual__():
    if "microk8s.status" in __salt__:
        return __virtualname__
    return (False, "the microk8s state module needs the microk8s execution module (and its binary)")


def _ret(name: str) -> dict:
    return {"name": name, "result": False, "changes": {}, "comment": ""}


def running(name: str = "microk8s", timeout: int = 300) -> dict:
    """
    Ensures microk8s is running and ready.

    .. code-block:: yaml

        microk8s-running:
          microk8s.running: []
    """
    ret = _ret(name)
    if __salt__["microk8s.is_running"]():
        ret.update(result=True, comment="microk8s is already running")
        return ret
    changes = {"running": {"old": False, "new": True}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment="microk8s would be started")
        return ret
    try:
        __salt__["microk8s.start"]()
        __salt__["microk8s.wait_ready"](timeout)
    except CommandExecutionError as error:
        ret["comment"] = f"microk8s could not be started: {error}"
        return ret
    ret.update(result=True, changes=changes, comment="microk8s started")
    return ret


def _addon(name: str, wanted: str, args: list[str] | None) -> dict:
    ret = _ret(name)
    try:
        current = __salt__["microk8s.addon_status"](name)
    except CommandExecutionError as error:
        ret["comment"] = str(error)
        return ret
    if current == wanted:
        ret.update(result=True, comment=f"addon {name} is already {wanted}")
        return ret
    changes = {name: {"old": current, "new": wanted}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment=f"addon {name} would be {wanted}")
        return ret
    try:
        if wanted == "enabled":
            __salt__["microk8s.enable"](name, args)
        else:
            __salt__["microk8s.disable"](name)
        after = __salt__["microk8s.addon_status"](name)
    except CommandExecutionError as error:
        ret["comment"] = f"addon {name} could not be {wanted}: {error}"
        return ret
    if after != wanted:
        ret["comment"] = f"addon {name} is still {after} after microk8s reported success"
        return ret
    ret.update(result=True, changes=changes, comment=f"addon {name} {wanted}")
    return ret


def addon_enabled(name: str, args: list[str] | None = None) -> dict:
    """
    Ensures an addon is enabled, with optional arguments (``dns`` with ``args: [1.1.1.1]``).

    .. code-block:: yaml

        microk8s-addon-dns:
          microk8s.addon_enabled:
            - name: dns
    """
    return _addon(name, "enabled", args)


def addon_disabled(name: str) -> dict:
    """Ensures an addon is disabled."""
    return _addon(name, "disabled", None)
