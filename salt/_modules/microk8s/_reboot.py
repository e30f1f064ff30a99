"""
Rolling reboots, the Kubernetes side: a control-plane node drains the node that is about to
reboot, noting the boot id its kubelet reports, and then waits until the kubelet reports Ready
with another boot id, the proof that the machine went down and came back (a Ready node with
the old id has not rebooted yet; the reboot is scheduled a few seconds after the node's own
``kube_on_os.reboot`` returns). orch.reboot runs these one node at a time; the node's side
(whether it needs a reboot, and the reboot) is ``kube_on_os``'s.

The boot ids are kept in Salt's cachedir on the node that drains (``BOOT_IDS``), since an
orchestration's steps cannot hand values to each other.

A machine replaced under its node's name (``-replace``, ``npm run roll``) is the same story with
a new machine: the chain's destroy-time hook (provisioners/drain-node.sh) drains the node before
its machine is deleted, noting its boot id apart (``REPLACEMENTS``), and orch.deploy, once the
new machine has joined and is Ready with its own boot id, uncordons it (``uncordon_replaced``).
"""

from __future__ import annotations

import json
import os

from salt.exceptions import CommandExecutionError

from . import _cli, _membership, _scale

# Below the minion's cachedir: {node name: the boot id its kubelet reported when it was drained},
# for a reboot and for a machine's replacement.
BOOT_IDS = "kube-on-os/reboot-boot-ids.json"
REPLACEMENTS = "kube-on-os/replacement-boot-ids.json"


def _path(opts: dict, notes: str) -> str:
    return os.path.join(opts["cachedir"], notes)


def _recorded(opts: dict, notes: str = BOOT_IDS) -> dict:
    try:
        with open(_path(opts, notes)) as existing:
            return json.load(existing)
    except FileNotFoundError:
        return {}


def _write(opts: dict, notes: str, recorded: dict) -> None:
    path = _path(opts, notes)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(f"{path}.new", "w") as new:
        json.dump(recorded, new)
    os.replace(f"{path}.new", path)


def drain(salt: dict, opts: dict, address: str, timeout: int, notes: str = BOOT_IDS) -> dict:
    """
    Notes the boot id of the node at ``address`` (in ``notes``), then cordons and drains it
    (``_scale.drain``: kubectl gives up after ``timeout`` seconds, naming the node):
    ``{"node", "boot_id"}``.
    """
    node = _membership.known_node_at(salt, address)
    if not node["boot_id"]:
        raise CommandExecutionError(f"{node['name']} reports no boot id: nothing would tell when it has rebooted")
    _write(opts, notes, {**_recorded(opts, notes), node["name"]: node["boot_id"]})
    _scale.drain(salt, node, timeout)
    return {"node": node["name"], "boot_id": node["boot_id"]}


def uncordon_replaced(salt: dict, opts: dict) -> dict:
    """
    For each node this control-plane node drained for its machine's replacement (``drain`` with
    ``REPLACEMENTS``): Ready with another boot id (the new machine's kubelet) is uncordoned and
    its note dropped; a node that pillar ``microk8s:nodes`` no longer names (scaled down) is
    dropped; a node still on the noted boot id (its machine was not replaced yet) stays cordoned
    and noted, for the next run. ``{"uncordoned", "waiting", "dropped"}``: node names.
    """
    noted = _recorded(opts, REPLACEMENTS)
    result: dict[str, list[str]] = {"uncordoned": [], "waiting": [], "dropped": []}
    if not noted:
        return result
    hosts = {node_id.split(".", 1)[0] for node_id in _membership.node_roles(salt)["addresses"]}
    known = {node["name"]: node for node in _membership.nodes(salt)}
    for name, boot_id in sorted(noted.items()):
        node = known.get(name)
        if name not in hosts:
            result["dropped"].append(name)
        elif node is not None and node["ready"] and node["boot_id"] and node["boot_id"] != boot_id:
            if node["unschedulable"]:
                _cli.run(salt, "kubectl", "uncordon", name)
            result["uncordoned"].append(name)
        else:
            result["waiting"].append(name)
    _write(opts, REPLACEMENTS, {name: noted[name] for name in result["waiting"]})
    return result


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
