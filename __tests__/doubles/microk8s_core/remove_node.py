"""
``microk8s remove-node NODE [--force]`` (scripts/wrappers/remove_node.py): the node by name or any
of its InternalIPs, and its dqlite member by the node's first InternalIP
(node_objects.removal_target). A node Kubernetes knows that is still in dqlite needs --force
("Removal failed. ... Please, run first 'microk8s leave' on the departing node.", exit 1);
--force also drops the member (remove_dqlite_node deletes any endpoint found, checking no
condition: a Ready voter too). A node Kubernetes does not know exits 1, after --force dropped its
member. Without a quorum its `kubectl get no` fails, so "Node <n> does not exist in Kubernetes.",
and with --force get_dqlite_endpoints' `dqlite .cluster` then fails too (leave.no_leader).
"""

from __future__ import annotations

from . import dqlite, node_objects
from .leave import no_leader


def no_quorum(target: str, force: bool) -> int:
    print(f"Node {target} does not exist in Kubernetes.")
    if force:
        print(f"Attempting to remove {target} from dqlite.")
        return no_leader()
    return 1


def remove(db: dict, target: str, force: bool) -> tuple[int, str, str, bool]:
    """
    remove_node.py on the cluster's database ``db`` ("nodes", "members"), changed in place: the
    answer, whose last item says whether the fake writes the database (every time but a refusal).
    """
    found, address = node_objects.removal_target(db["nodes"], target)
    in_dqlite = any(dqlite.host_of(m) == address for m in db["members"])
    if found and in_dqlite and not force:
        advice = "Please, run first 'microk8s leave' on the departing node."
        return 1, f"Removal failed. Node {target} is registered with dqlite. {advice}\n", "", False
    if force:
        db["members"] = [m for m in db["members"] if dqlite.host_of(m) != address]
    db["nodes"] = [n for n in db["nodes"] if n is not found]
    if found:
        return 0, "", "", True
    out = f"Node {target} does not exist in Kubernetes.\n"
    if force and in_dqlite:
        out += f"Attempting to remove {target} from dqlite.\nRemoving node entry found in dqlite.\n"
    return 1, out, "", True
