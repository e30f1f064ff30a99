"""
State module for the pillar's ``file_transfer`` files: the user's own files (a CA bundle, a
registry configuration, a sysctl file) from ``salt/file_transfer/files/``, on the hosts the
pillar names. All or nothing: when one file breaks a rule, no file is transferred, and the
comment names the pillar key. Each file is Salt's ``file.managed``, so test mode reports what
would change and changes nothing.
"""

from __future__ import annotations

from salt.exceptions import CommandExecutionError

__virtualname__ = "file_transfer"

# Files that states of the Salt tree write other than by naming them (so the highstate's chunks
# cannot show them), and trees that Salt or microk8s own, with what they hold. A transfer may
# write none of them.
PROTECTED = {
    "/etc/salt": "Salt's own configuration and keys",
    "/srv/salt": "the Salt tree the chain uploads",
    "/srv/pillar": "the pillar the chain uploads",
    "/var/snap/microk8s": "microk8s' own files, which the microk8s states change",
    "/snap": "the snaps",
    # salt.modules.linux_sysctl.persist's default config
    "/etc/sysctl.d/99-salt.conf": "core.sysctl's settings (sysctl.present)",
    # salt.modules.iptables._conf on Debian
    "/etc/iptables/rules.v4": "bastion.iptables' saved rules",
    "/etc/iptables/rules.v6": "bastion.iptables' saved rules",
}


def __virtual__():
    if "kube_on_os.file_transfers" in __salt__:
        return __virtualname__
    return (False, "the file_transfer state module needs the kube_on_os execution module")


def _under(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def _claimed(path: str) -> str | None:
    """Why ``path`` is not the user's: a state of another SLS in this run manages it, or it is protected."""
    this_sls = __low__.get("__sls__")
    for chunk in __lowstate__ or []:
        if chunk.get("__sls__") == this_sls:
            continue
        name = chunk.get("name")
        if not isinstance(name, str) or not name.startswith("/"):
            continue
        whole_tree = chunk.get("state") == "file" and (
            chunk.get("fun") == "recurse" or (chunk.get("fun") == "directory" and chunk.get("recurse"))
        )
        if path == name or (whole_tree and _under(path, name)):
            return f"{chunk['__sls__']} ({chunk['__id__']}) manages this file"
    for tree, held in PROTECTED.items():
        if _under(path, tree):
            return f"{tree} holds {held}"
    return None


def transferred(name: str) -> dict:
    """
    Ensures that this host holds each file of the ``file_transfer`` pillar whose ``hosts`` name
    it, with its owner and mode. The state reads the pillar itself: the user's data never passes
    through a template.

    .. code-block:: yaml

        file_transfer-file_transfer-transferred:
          file_transfer.transferred: []
    """
    ret = {"name": name, "result": False, "changes": {}, "comment": ""}
    try:
        wanted = __salt__["kube_on_os.file_transfers"](__pillar__.get("file_transfer"))
    except CommandExecutionError as error:
        ret["comment"] = f"{error}: no file is transferred"
        return ret
    if not wanted:
        ret.update(result=True, comment="the pillar's file_transfer names no file for this host")
        return ret
    for transfer in wanted:
        claimed = _claimed(transfer["name"])
        if claimed:
            ret["comment"] = f"file_transfer:{transfer['name']}: {claimed}: no file is transferred"
            return ret
    served = set(__salt__["cp.list_master"](saltenv=__env__, prefix="file_transfer/files/"))
    for transfer in wanted:
        source = transfer["source"].removeprefix("salt://")
        if source not in served:
            key = f"file_transfer:{transfer['name']}:source"
            ret["comment"] = f"{key}: salt/{source} is not in the Salt tree: no file is transferred"
            return ret
    failed, changed = [], []
    for transfer in wanted:
        result = __states__["file.managed"](**transfer, makedirs=True)
        if result["changes"]:
            ret["changes"][transfer["name"]] = result["changes"]
            changed.append(transfer["name"])
        if result["result"] is False:
            failed.append(f"file_transfer:{transfer['name']}: {result['comment']}")
    if failed:
        ret["comment"] = "; ".join(failed)
    elif __opts__["test"] and changed:
        ret.update(result=None, comment=f"would transfer {', '.join(changed)}")
    else:
        done = f"transferred {', '.join(changed)}" if changed else "every file is in place"
        ret.update(result=True, comment=f"{done} ({len(wanted)} of the pillar's files for this host)")
    return ret
