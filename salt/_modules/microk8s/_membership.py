"""
Who is in the cluster and who should be: the node roles the pillar gives (the dqlite voters of
``microk8s:control_plane`` and the workers), the members dqlite and Kubernetes know, and taking
a node out (``remove-node``, ``leave``).
"""

from __future__ import annotations

import calendar
import ipaddress
import json
import time

from salt.exceptions import CommandExecutionError

from . import _cli, _status
from . import _constants as constants


def _fail(key: str, problem: str, value) -> CommandExecutionError:
    return CommandExecutionError(f"pillar microk8s:{key} {problem}, got {value!r}")


def parse_roles(settings: dict) -> dict:
    """
    Who is who in the cluster, from the ``microk8s`` pillar:

    - ``nodes``: every Kubernetes node as ``{id, address}`` (its private address), in order;
    - ``control_plane``: the ids of the dqlite voters; everyone else joins as a worker.
      Terraform's cluster layout writes it (the first three nodes, as microk8s HA needs three),
      so that the size lives in one place; a pillar layer may name other voters;
    - ``master``: the node that bootstraps the cluster and issues tokens (default: the first).

    Returns ``{"master", "control_plane", "workers", "joiners", "addresses"}``, the master first
    in ``control_plane``. Raises CommandExecutionError naming the key and the bad value.
    """
    nodes = settings.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise _fail("nodes", "must list every Kubernetes node as {id, address}", nodes)
    addresses: dict[str, str] = {}
    for node in nodes:
        if not isinstance(node, dict) or not node.get("id") or not node.get("address"):
            raise _fail("nodes", "entries need an id and an address", node)
        try:
            ipaddress.ip_address(str(node["address"]))
        except ValueError:
            raise _fail("nodes", "addresses must be IP addresses", node["address"]) from None
        if node["id"] in addresses:
            raise _fail("nodes", "ids must be unique", node["id"])
        if str(node["address"]) in addresses.values():
            raise _fail("nodes", "addresses must be unique", node["address"])
        addresses[str(node["id"])] = str(node["address"])
    ids = list(addresses)

    if "control_plane_size" in settings:
        # Removed rather than ignored: a size that silently stopped counting would change roles.
        raise _fail(
            "control_plane_size",
            "is not read any more; name the voters in microk8s:control_plane",
            settings["control_plane_size"],
        )
    control_plane = settings.get("control_plane")
    if not isinstance(control_plane, list) or not control_plane:
        raise _fail("control_plane", "must list the node ids of the dqlite voters", control_plane)
    unknown = [node for node in control_plane if node not in addresses]
    if unknown:
        raise _fail("control_plane", "may only name ids from microk8s:nodes", unknown)

    master = settings.get("master") or ids[0]
    if master not in control_plane:
        raise _fail("master", f"must be one of the control plane {control_plane}", master)
    ordered = [master, *(node for node in ids if node in control_plane and node != master)]
    workers = [node for node in ids if node not in control_plane]
    return {
        "master": master,
        "control_plane": ordered,
        "workers": workers,
        "joiners": {node: node in workers for node in ids if node != master},
        "addresses": addresses,
    }


def node_roles(salt: dict) -> dict:
    return parse_roles(salt["pillar.get"]("microk8s", {}))


def joiners_of(roles: dict, issuer: str) -> dict[str, bool]:
    """
    ``{id: joins_as_worker}`` for every node but ``issuer``, in pillar order: the nodes that join
    through the tokens ``issuer`` publishes. With the master issuing that is ``roles["joiners"]``;
    with another voter issuing, the master is a (control-plane) joiner too.
    """
    workers = set(roles["workers"])
    return {node: node in workers for node in roles["addresses"] if node != issuer}


def joined(membership: dict, worker: bool, address: str | None) -> bool:
    """
    Whether ``membership`` is the wanted role: a worker, or a control-plane member of the
    cluster that lists ``address`` (the issuer's after a join; the node's own in a mine report).
    """
    if worker:
        return membership["role"] == "worker"
    return membership["role"] == "control-plane" and (address is None or address in membership["members"])


def choose_issuer(roles: dict, reports: dict) -> str:
    """
    The voter that issues join tokens, from the memberships the voters reported (``{id:
    membership}``, the mine's ``microk8s.membership``):

    - while no voter reports itself a control-plane member of a cluster that lists its own
      address (a new deployment: every node stands alone), the pillar's master, which
      bootstraps the cluster;
    - the master while it is in the cluster, or while its report, even one saying it stands
      alone, names the cluster's certificate authority: a report from before the cluster formed
      is stale, not a rebuilt master (the mine is updated at the start of an orchestration, and
      the master bootstrapped the cluster whose CA the joiners took);
    - otherwise the first voter in the cluster, in pillar order: the master was rebuilt (no
      report yet, or a new CA), and it joins through that voter instead of starting a cluster.
    """
    master = roles["master"]

    def in_cluster(voter: str) -> bool:
        report = reports.get(voter)
        return (
            isinstance(report, dict)
            and "role" in report
            and joined(
                {"role": report["role"], "members": report.get("members") or []}, False, roles["addresses"][voter]
            )
        )

    members = [voter for voter in roles["control_plane"] if in_cluster(voter)]
    if not members or members[0] == master:
        return master
    report = reports.get(master)
    # Equal when both name the same CA, or both name none (a microk8s without certificates,
    # which cannot be told from the cluster's: the master keeps issuing).
    if isinstance(report, dict) and report.get("ca") == reports[members[0]].get("ca"):
        return master
    return members[0]


def issuer(salt: dict) -> str:
    """``choose_issuer`` over the voters' memberships in the mine."""
    roles = node_roles(salt)
    reports = salt["mine.get"](",".join(roles["control_plane"]), constants.MEMBERSHIP_MINE, tgt_type="list") or {}
    return choose_issuer(roles, reports)


def parse_nodes(text: str) -> list[dict]:
    """
    ``[{"name", "address" (the first InternalIP), "addresses" (every InternalIP, in order), "ready",
    "unreachable", "ready_changed", "unschedulable", "version" (kubelet), "boot_id"}]`` from
    ``kubectl get nodes -o json``; ``unreachable``: its Ready condition is Unknown, which the node
    lifecycle controller sets once the kubelet stops reporting (Cluster API's noderefutil
    IsNodeUnreachable); ``ready_changed``: that condition's lastTransitionTime (None without one); a node
    the cloud controller manager initialised lists every fixed IP of its server, so a dual-homed
    node has two InternalIPs (cloud-provider-openstack instances_addresses.go nodeAddresses);
    ``boot_id`` is the machine's boot id as its kubelet
    reports it (core/v1 NodeSystemInfo.BootID, /proc/sys/kernel/random/boot_id), new after every
    boot. A --worker node's kubectl wrapper prints a sentence instead
    (exit 0): that, and anything else that is not a NodeList, is a CommandExecutionError.
    """
    if _status.is_worker_message(text):
        raise CommandExecutionError("this node joined with --worker and cannot list nodes; ask a control-plane node")
    try:
        items = json.loads(text or "{}").get("items") or []
        result = []
        for item in items:
            node_status = item.get("status") or {}
            internal = [a["address"] for a in node_status.get("addresses") or [] if a.get("type") == "InternalIP"]
            conditions = node_status.get("conditions") or []
            condition = next((c for c in conditions if c.get("type") == "Ready"), {})
            result.append(
                {
                    "name": item["metadata"]["name"],
                    "address": internal[0] if internal else None,
                    "addresses": internal,
                    "ready": condition.get("status") == "True",
                    "unreachable": condition.get("status") == "Unknown",
                    "ready_changed": condition.get("lastTransitionTime"),
                    "unschedulable": (item.get("spec") or {}).get("unschedulable") is True,
                    "version": (node_status.get("nodeInfo") or {}).get("kubeletVersion"),
                    "boot_id": (node_status.get("nodeInfo") or {}).get("bootID"),
                }
            )
    except (ValueError, AttributeError, KeyError, TypeError) as error:
        raise CommandExecutionError(f"kubectl get nodes printed no NodeList ({error!r}): {text[:200]!r}") from None
    return result


def nodes(salt: dict) -> list[dict]:
    return parse_nodes(_cli.run(salt, "kubectl", "get", "nodes", "-o", "json"))


def not_ready_seconds(node: dict, now: float) -> int | None:
    """
    How long ``node`` (of ``parse_nodes``) has not been Ready at ``now``: 0 while it is, else the
    whole seconds since its Ready condition last changed (metav1.Time, RFC 3339 in UTC to the
    second); None when the condition gives no time to count from.
    """
    if node["ready"]:
        return 0
    try:
        changed = calendar.timegm(time.strptime(node["ready_changed"], "%Y-%m-%dT%H:%M:%SZ"))
    except (TypeError, ValueError):
        return None
    return max(0, int(now - changed))


def health(salt: dict, now: float | None = None) -> list[dict]:
    """
    Each Kubernetes node's readiness, as ``npm run repair`` judges it: ``[{"name", "addresses",
    "ready", "unreachable", "not_ready_seconds"}]`` (``not_ready_seconds`` by this node's clock,
    which the controller that set the condition shares).
    """
    now = time.time() if now is None else now
    keep = ("name", "addresses", "ready", "unreachable")
    return [
        {**{key: node[key] for key in keep}, "not_ready_seconds": not_ready_seconds(node, now)} for node in nodes(salt)
    ]


def node_of(known: list[dict], node_id: str | None, address: str) -> dict | None:
    """
    The Kubernetes node (of ``known``, from ``nodes()``) of the pillar node ``node_id`` at private
    ``address``: the one with that InternalIP, else the one named after its host.
    kubelet's InternalIP is the address of the interface with the default route, so the
    dual-homed Kubernetes master (public network first, constructs/kube-node-pool.ts) registers
    its public address, not the private one the pillar lists; its node name is its host name,
    the first label of its minion id (cloud-init sets the short hostname; kubelet's default
    --hostname-override is the hostname).
    """
    by_address = next((node for node in known if address in node["addresses"]), None)
    if by_address is not None or node_id is None:
        return by_address
    return next((node for node in known if node["name"] == node_id.split(".", 1)[0]), None)


def node_at(salt: dict, address: str) -> dict | None:
    """``node_of`` for the pillar node at ``address`` (by address alone when no pillar node has it)."""
    ids = [node_id for node_id, at in node_roles(salt)["addresses"].items() if at == address]
    return node_of(nodes(salt), ids[0] if ids else None, address)


def known_node_at(salt: dict, address: str) -> dict:
    """``node_at``, for the rolls: a node Kubernetes does not know is an error naming the address."""
    node = node_at(salt, address)
    if node is None:
        raise CommandExecutionError(f"Kubernetes has no node at {address}")
    return node


class MembersUnknown(CommandExecutionError):
    """dqlite did not say who its members are: no conclusion about membership may be drawn."""


def members(salt: dict) -> list[dict]:
    """
    The dqlite members, as status lists them. HA enabled with nobody listed means status.py's
    dqlite query failed ten times (get_dqlite_info returns []; microk8s#2190), never that this
    node is alone, since a node of its own lists itself: asked again ``MEMBERS_ATTEMPTS`` times,
    then MembersUnknown.
    """
    for attempt in range(constants.MEMBERS_ATTEMPTS):
        if attempt:
            time.sleep(constants.MEMBERS_INTERVAL)
        ha = _status.status(salt)["high_availability"]
        if ha["nodes"] or not ha["enabled"]:
            return ha["nodes"]
    raise MembersUnknown(
        f"microk8s status listed no dqlite members {constants.MEMBERS_ATTEMPTS} times while high availability "
        "is enabled (dqlite did not answer); nothing is decided on an empty list"
    )


def member_hosts(salt: dict) -> list[str]:
    """The addresses of the dqlite members, without their port."""
    return [member["address"].rsplit(":", 1)[0] for member in members(salt)]


def membership(salt: dict) -> dict:
    """
    ``{"role": "worker" | "control-plane" | "standalone", "members": [addresses], "ca"}``. A
    node is control plane once dqlite knows more members than itself; ``ca`` tells which
    cluster (``_certs.ca_fingerprint``). Raises MembersUnknown rather than call a node
    standalone on an empty member list.
    """
    from . import _certs

    ca = _certs.ca_fingerprint(salt)
    if _status.is_worker(salt):
        return {"role": "worker", "members": [], "ca": ca}
    addresses = member_hosts(salt)
    return {"role": "control-plane" if len(addresses) > 1 else "standalone", "members": addresses, "ca": ca}


def leave(salt: dict) -> str:
    return _cli.run(salt, "leave")


def remove_node(salt: dict, node: str, force: bool = False) -> str:
    return _cli.run(salt, "remove-node", node, *(["--force"] if force else []))


def forget_member(salt: dict, address: str, keep_ready: bool = False) -> bool:
    """
    Removes the dqlite member (and Kubernetes node) at ``address``; False if there is none.
    With ``keep_ready`` it refuses while the Kubernetes node at that address is Ready: the join
    protocol acts on a joiner's report, and a healthy member is never removed on a report (a
    rebuilt machine's old member is NotReady: its kubelet stopped reporting to this cluster).
    Scale-down, where the pillar no longer lists the node, removes it either way.

    The outcome is judged by the members afterwards, whatever remove-node said: it exits 1 when
    the node is in dqlite but not in Kubernetes, even after removing it; and it finds the member
    by the node's *first* InternalIP (remove_node.py remove_dqlite_node), so for a node that lists
    another address first it deletes the Kubernetes node only and exits 0. Asked again once that
    node is gone, it takes the address itself to dqlite (its "does not exist in Kubernetes" path).
    """
    if address not in member_hosts(salt):
        return False
    if keep_ready:
        healthy = [node["name"] for node in nodes(salt) if address in node["addresses"] and node["ready"]]
        if healthy:
            raise CommandExecutionError(
                f"refusing to remove the dqlite member at {address}: its node {healthy[0]} is Ready (a healthy member)"
            )
    for _ in range(2):
        try:
            remove_node(salt, address, force=True)
        except CommandExecutionError:
            if address in member_hosts(salt):
                raise
            return True
        if address not in member_hosts(salt):
            return True
    raise CommandExecutionError(f"microk8s remove-node {address} --force left the dqlite member at {address} in place")


def forget_node(salt: dict, address: str) -> bool:
    """
    The node at ``address`` removed: while it is a dqlite member (it did not leave), with
    ``--force``, which remove_node.py needs to unregister a member ("Please, run first 'microk8s
    leave' on the departing node" otherwise); else, a worker or a member that left (leave.py
    deletes its own dqlite entry), as a Kubernetes node by name, which a plain remove-node does.
    """
    if forget_member(salt, address):
        return True
    names = [node["name"] for node in nodes(salt) if address in node["addresses"]]
    for name in names:
        remove_node(salt, name)
    return bool(names)


def cluster_check(salt: dict, expected_nodes: int | None = None) -> dict:
    """``{"ready", "expected"}``; raises unless that many nodes (default: the pillar's) are Ready."""
    expected = int(expected_nodes) if expected_nodes is not None else len(node_roles(salt)["addresses"])
    ready = sorted(node["name"] for node in nodes(salt) if node["ready"])
    if len(ready) < expected:
        raise CommandExecutionError(f"only {len(ready)} of {expected} nodes are Ready: {', '.join(ready) or 'none'}")
    return {"ready": ready, "expected": expected}
