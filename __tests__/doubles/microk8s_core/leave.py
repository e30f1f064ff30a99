"""
``microk8s leave`` (scripts/wrappers/leave.py, 1.28 and 1.35 alike). A worker resets its services
("Configuring services.": reset_current_dqlite_worker_installation, which also removes the
cluster's CA it kept as certs/ca.remote.crt); a control-plane node leaves dqlite, unless it is the
one voter of a cluster with other members (reset_current_dqlite_installation,
is_leader_without_successor: three lines, exit 3; a node alone can leave), whose `dqlite .cluster`
needs the leader: without a quorum check_output raises (dqlite.NO_LEADER_TRACEBACK). Either goes
back to a cluster of its own (reinit_cluster: new dqlite cluster.crt and cluster.key, and
rebuild_x509_auth_client_configs new client certificates from the CA there is: ca.crt stays),
printing "Generating new cluster certificates." and apply_cni's "Waiting for node to start.";
its Kubernetes node stays, NotReady, until remove-node.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import dqlite, layout

ONLY_COPY = (
    "This node currently holds the only copy of the Kubernetes database so it cannot leave the cluster.\n"
    "To remove this node you can either first remove all other nodes with 'microk8s remove-node' or\n"
    "form a highly available cluster by adding at least three nodes."
)


def no_leader() -> int:
    """leave.py / remove_node.py: `dqlite .cluster` fails without a leader, and check_output raises."""
    print(dqlite.NO_LEADER_TRACEBACK, file=sys.stderr)
    return 1


def only_copy(members: list[dict], own: set[str]) -> int:
    """is_leader_without_successor for the node at any of ``own``: exit 3 with its lines, or 0."""
    if not dqlite.leader_without_successor(members, own):
        return 0
    print(ONLY_COPY)
    return 3


def reset_worker(snap_data: Path) -> None:
    """reset_current_dqlite_worker_installation: os.remove(ca_cert_file), the ca.remote.crt."""
    print("Configuring services.")
    (snap_data / layout.REMOTE_CA).unlink(missing_ok=True)


def left(snap_data: Path) -> int:
    """The node back in a cluster of its own (the caller's part): no longer a worker, and said so."""
    (snap_data / layout.WORKER_LOCK).unlink(missing_ok=True)
    print("Generating new cluster certificates.\nWaiting for node to start.  ")
    return 0
