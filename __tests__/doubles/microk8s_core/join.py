"""
``microk8s join``, on the joiner (scripts/wrappers/join.py) and in the cluster agent of the node
it joins (microk8s-cluster-agent pkg/api/v2/join.go): the checks, their order, the texts and exit
codes, and what the agent's answer carries. How the joiner reaches the agent is each fake's.

On the joiner (diff 1.28..1.35 of join.py):
- 1.35 first checks the connection string (common/cluster/utils.py get_valid_connection_parts:
  "Invalid connection: <reason>", exit 1); 1.28 does not;
- "Contacting cluster at <ip>"; with a fingerprint in the connection string and no
  ``--skip-verify``, join_request compares it with the start of the sha256 of the master's
  certificate in DER (server_cert.fingerprint) before it posts anything: "Joining cluster failed.
  Could not verify the identity of <ip>. ...", exit 4, the token not spent; without a
  fingerprint nothing is verified;
- an HTTP error of the agent's is printed as "Connection failed. <error> (<status>).", exit 6;
- joined: print_worker_usage (a worker), or update_dqlite's "Waiting for this node to finish
  joining the cluster." (a control-plane node: the wait, end=" ", then print(" ")); without a
  quorum update_dqlite's ten `dqlite .cluster` tries fail ("..", each) and join.py carries on,
  exit 0, the node not a member; 1.35 then ends every join with "Successfully joined the
  cluster.", 1.28 with nothing;
- what it stores from the agent's answer (JoinResponse): the agent's node's kubelet arguments
  over its own (store_base_kubelet_args, worker and control plane alike); a control-plane joiner
  the CA and its key as certs/ca.crt and ca.key (join_dqlite_master_node: store_cert, keeping a
  .backup), after which the apiservice-kicker's ensure_server_ca finds server.crt not issued by
  that CA and issues a new one; a worker the CA as certs/ca.remote.crt (join_dqlite_worker_node:
  store_remote_ca), keeping its own ca.crt, and var/lock/clustered.lock.

In the agent (join.go Join), in this order:
- the token (tokens.consume): "invalid token", HTTP 500, a single-use one spent before any other
  check;
- the joiner's hostname must resolve, on the agent's node, to the address the join comes from
  (HTTP 400);
- reading its node's dqlite cluster (cluster.yaml, no quorum needed): the fault
  ``join_dqlite_error`` stands for its failure, "failed to retrieve dqlite cluster nodes: <text>"
  (default pkg/snap/util/dqlite.go WaitForDqliteCluster's "timed out waiting for cluster
  condition: context deadline exceeded"), HTTP 500;
- a joiner dqlite already knows (only dqlite members are checked: a rebuilt worker, never a
  member, simply joins again): branch 1.28, "the joining node (<ip>) is already known to dqlite",
  HTTP 504; the agent 1.35 builds (build-scripts/components/cluster-agent/version.sh; the current
  agent's pkg/snap/util/dqlite.go MaybeUpdateDqliteBindAddress, wrapped by join.go) "failed to
  retrieve dqlite cluster nodes: the joining node (<ip>) is already known to dqlite", HTTP 500,
  the same prefix that wraps the fault's text once more. The agent's release is its own node's;
- a worker's join lists the control plane through the API server (ListControlPlaneNodeIPs,
  pkg/snap/util/kubectl.go), which needs the datastore's quorum: without one "failed to retrieve
  list of control plane nodes: failed to list nodes: <the API server's 504>", HTTP 500;
- the answer (JoinResponse) carries the CA the agent reads from its node (Snap.ReadCA), the CA's
  key for a control-plane joiner only (``ca_key`` null for a worker), and its node's kubelet
  arguments (KubeletArgs).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from pathlib import Path

from . import dqlite, layout, server_cert

# The cluster agent's port, the join URL's.
AGENT_PORT = 25000
# common/cluster/utils.py (1.35): the token and fingerprint minimum lengths (its TOKEN_MIN_LEN is
# spelt with Greek capitals there).
TOKEN_MIN_LEN = 32
FINGERPRINT_MIN_LEN = 12
SKIP_VERIFY = " Use '--skip-verify' to skip server certificate check."
# print_worker_usage, in 1.28 and 1.35 alike.
WORKER_USAGE = (
    "\nThe node has joined the cluster and will appear in the nodes list in a few seconds.\n\n"
    "This worker node gets automatically configured with the API server endpoints.\n"
    "If the API servers are behind a loadbalancer please set the '--refresh-interval' to '0s' in:\n"
    "    /var/snap/microk8s/current/args/apiserver-proxy\n"
    "and replace the API server endpoints with the one provided by the loadbalancer in:\n"
    "    /var/snap/microk8s/current/args/traefik/provider.yaml\n\n"
)
WAITING = "Waiting for this node to finish joining the cluster."
DQLITE_ERROR = "failed to retrieve dqlite cluster nodes: "
DQLITE_ERROR_TEXT = "timed out waiting for cluster condition: context deadline exceeded"


def invalid_connection(connection: str) -> str | None:
    """common/cluster/utils.py get_valid_connection_parts (1.35): the reason, or None when valid."""
    parts = connection.split("/")
    expected = "Expected format: <master_IP>:<master_PORT>/<token>[/<fingerprint>]"
    if len(parts) not in (2, 3):
        return expected
    endpoint = parts[0].split(":")
    if len(endpoint) != 2:
        return expected
    try:
        ipaddress.ip_address(endpoint[0])
    except ValueError:
        return "Invalid master IP"
    try:
        port = int(endpoint[1])
    except ValueError:
        return "Master PORT not a number"
    if port < 1 or port > 65535:
        return "Master PORT not in range 1:65535"
    if len(parts[1]) < TOKEN_MIN_LEN:
        return f"Cluster token size should be at least {TOKEN_MIN_LEN} bytes"
    if len(parts) == 3 and len(parts[2]) < FINGERPRINT_MIN_LEN:
        return f"Fingerprint should be at least {FINGERPRINT_MIN_LEN} bytes"
    return None


def contact(connection: str, minor: int) -> tuple[str, str, str | None] | None:
    """
    join.py until it contacts the master: the master's address, the token and the fingerprint
    (None without one); None once 1.35 refused the connection string (exit 1).
    """
    reason = invalid_connection(connection) if minor >= 35 else None
    if reason:
        print("Invalid connection:", reason)
        return None
    parts = connection.split("/")
    host, token = parts[0].split(":", 1)[0], parts[1]
    print(f"Contacting cluster at {host}")
    return host, token, parts[2] if len(parts) > 2 else None


def verify(host: str, fingerprint: str, certificate: Callable[[], str | None]) -> int:
    """join_request's check of the master's ``certificate`` (PEM, asked only when needed): 0, or exit 4."""
    if len(fingerprint) < FINGERPRINT_MIN_LEN:
        print(f"Joining cluster failed. Fingerprint too short.{SKIP_VERIFY}")
        return 4
    pem = certificate()
    if pem and not server_cert.fingerprint(pem).startswith(fingerprint):
        print(f"Joining cluster failed. Could not verify the identity of {host}.{SKIP_VERIFY}")
        return 4
    return 0


def refused(status: int, error: str) -> int:
    """join.py on an HTTP error of the agent's: exit 6."""
    print(f"Connection failed. {error} ({status}).")
    return 6


def joined(minor: int, worker: bool, stalled: bool = False) -> int:
    """What join.py prints once the agent accepted the join (``stalled``: dqlite found no quorum)."""
    if worker:
        print(WORKER_USAGE, end="")
    elif stalled:
        print(f"{WAITING} " + ".. " * 10 + " ")
    else:
        print(f"{WAITING}  ")
    if minor >= 35:
        print("Successfully joined the cluster.")
    return 0


def store(snap_data: Path, answer: dict, worker: bool, addresses: list[str]) -> None:
    """What join.py stores from the agent's ``answer`` (``response``) on the joiner at ``snap_data``."""
    store_kubelet_args(snap_data, answer)
    if worker:
        (snap_data / layout.REMOTE_CA).write_text(answer["ca"])
        (snap_data / layout.WORKER_LOCK).parent.mkdir(parents=True, exist_ok=True)
        (snap_data / layout.WORKER_LOCK).touch()
    else:
        store_cert(snap_data / layout.CA_CRT, answer["ca"])
        store_cert(snap_data / layout.CA_KEY, answer["ca_key"])
        server_cert.gen_server_cert(snap_data, addresses)


def store_kubelet_args(snap_data: Path, answer: dict) -> None:
    """store_base_kubelet_args: the agent's node's kubelet arguments over the joiner's own."""
    if answer.get("kubelet_args") is not None:
        (snap_data / layout.KUBELET_ARGS).parent.mkdir(parents=True, exist_ok=True)
        (snap_data / layout.KUBELET_ARGS).write_text(answer["kubelet_args"])


def store_cert(path: Path, payload: str) -> None:
    """join.py store_cert: the file kept as <name>.backup, then the payload written."""
    if path.exists():
        path.with_name(f"{path.name}.backup").write_text(path.read_text())
    path.write_text(payload)


# --- the agent ------------------------------------------------------------------------------------


def response(snap_data: Path, worker: bool) -> dict:
    """What JoinResponse carries from the agent's node at ``snap_data``."""
    kubelet_args = snap_data / layout.KUBELET_ARGS
    return {
        "ca": (snap_data / layout.CA_CRT).read_text(),
        "ca_key": None if worker else (snap_data / layout.CA_KEY).read_text(),
        "kubelet_args": kubelet_args.read_text() if kubelet_args.exists() else None,
    }


def invalid_token() -> tuple[int, str]:
    return 500, "invalid token"


def unresolved(hostname: str, address: str) -> tuple[int, str]:
    """The joiner's ``hostname`` does not resolve to ``address``, where its join comes from."""
    return 400, f'the hostname ({hostname}) of the joining node does not resolve to the IP "{address}". Refusing join'


def dqlite_failed(faults: dict, agent_minor: int) -> tuple[int, str]:
    """The ``join_dqlite_error`` fault, spent (``faults``), from an agent of release ``agent_minor``."""
    text = faults.get("join_dqlite_error_text", DQLITE_ERROR_TEXT)
    return 500, DQLITE_ERROR * (2 if current_agent(agent_minor) else 1) + text


def already_known(address: str, agent_minor: int) -> tuple[int, str]:
    known = f"the joining node ({address}) is already known to dqlite"
    return (500, DQLITE_ERROR + known) if current_agent(agent_minor) else (504, known)


def no_control_plane() -> tuple[int, str]:
    """A worker's join without the datastore's quorum."""
    return 500, f"failed to retrieve list of control plane nodes: failed to list nodes: {dqlite.TIMED_OUT} (get nodes)"


def current_agent(agent_minor: int) -> bool:
    """Whether a node of this release runs the current agent (1.35's), not branch 1.28's."""
    return agent_minor >= 29
