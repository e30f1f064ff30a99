"""
Rolling reboots, the Kubernetes side: a control-plane node drains the node that is about to
reboot, noting the boot id its kubelet reports, and then waits until the kubelet reports Ready
with another boot id, the proof that the machine went down and came back (a Ready node with
the old id has not rebooted yet; the reboot is scheduled a few seconds after the node's own
``kube_on_os.reboot`` returns). orch.reboot runs these one node at a time; the node's side
(whether it needs a reboot, and the reboot) is ``kube_on_os``'s.

The boot ids are kept in Salt's cachedir on the node that drains (``BOOT_IDS``), since an
orchestration's steps cannot hand values to each other.
"""

from __future__ import annotations

import json
import os

from salt.exceptions import CommandExecutionError

from . import _membership, _scale

# Below the minion's cachedir: {node name: the boot id its kubelet reported when it was drained}.
BOOT_IDS = "kube-on-os/reboot-boot-ids.json"


def _path(opts: dict) -> str:
    return os.path.join(opts["cachedir"], BOOT_IDS)


def _recorded(opts: dict) -> dict:
    try:
        with open(_path(opts)) as existing:
            return json.load(existing)
    except FileNotFoundError:
        return {}


def _record(opts: dict, name: str, boot_id: str) -> None:
    path = _path(opts)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    recorded = {**_recorded(opts), name: boot_id}
    with open(f"{path}.new", "w") as new:
        json.dump(recorded, new)
    os.replace(f"{path}.new", path)


def drain(salt: dict, opts: dict, address: str, timeout: int) -> dict:
    """
    Notes the boot id of the node at ``address``, then cordons and drains it (``_scale.drain``:
    kubectl gives up after ``timeout`` seconds, naming the node): ``{"node", "boot_id"}``.
    """
    node = _membership.known_node_at(salt, address)
    if not node["boot_id"]:
        raise CommandExecutionError(f"{node['name']} reports no boot id: nothing would tell when it has rebooted")
    _record(opts, node["name"], node["boot_id"])
    _scale.drain(salt, node["name"], timeout)
    return {"node": node["name"], "boot_id": node["boot_id"]}


def wait(salt: dict, opts: dict, address: str, timeout: int, interval: float) -> dict:
    """
    Waits until the node at ``address`` is Ready with a boot id other than the one ``drain``
    noted: ``{"node", "boot_id"}``. While the node is down the API server may not answer (the
    node is the one it ran on), so failed readings are read again; after ``timeout`` seconds the
    error names the node and its last state.
    """

    def reading(node: dict) -> tuple[dict | None, str | None]:
        before = _recorded(opts).get(node["name"])
        if before is None:
            raise CommandExecutionError(
                f"no boot id was noted for {node['name']}: drain it for the reboot first (microk8s.drain_for_reboot)"
            )
        if node["ready"] and node["boot_id"] and node["boot_id"] != before:
            return {"node": node["name"], "boot_id": node["boot_id"]}, None
        booted = "has not rebooted" if node["boot_id"] == before else "rebooted"
        return None, f"{node['name']} {booted}, {'Ready' if node['ready'] else 'not Ready'}"

    return _scale.wait_node(salt, address, timeout, interval, reading, "not back from its reboot")
