"""
Clustering: node roles from the pillar, join tokens and the join/leave protocol, after microk8s'
add_token.py and join.py and the cluster agent's Join handler (canonical/microk8s-cluster-agent).
Pure functions over data; the package's __init__ does the I/O.
"""

from __future__ import annotations

import ipaddress
import json
import re

import yaml
from salt.exceptions import CommandExecutionError

from . import _constants as constants

# How a failed `microk8s join` ends, by the texts microk8s prints (join.py relays the cluster
# agent's error as "Connection failed. <error> (<HTTP status>).").
_ERROR_KINDS = (
    # ConsumeClusterToken refused it: never issued, already used (single-use) or expired.
    ("invalid-token", ("invalid token", "token is expired")),
    # The agent found the joiner's address among the dqlite members: a rebuilt node.
    ("already-known", ("already known to dqlite",)),
    # The master could not resolve the joiner's hostname to its address.
    ("hostname-unresolved", ("does not resolve to the ip",)),
    # The master's cluster agent did not answer (not installed or restarting yet).
    (
        "unreachable",
        (
            "connection refused",
            "please ensure the master node is reachable",
            "connecting to cluster failed",
            "no route to host",
            "timed out",
        ),
    ),
    ("not-running", ("microk8s is not running",)),
)
# Failures that consumed the joiner's token and need the master to issue a new one.
RENEWABLE = ("invalid-token", "already-known", "hostname-unresolved")
# What else a joiner may ask the master for: a token when none is published for it (a rebuilt
# node, whose old address the master still counts as joined).
MISSING = "no-token"
# Failures that go away by waiting for the master.
TRANSIENT = ("unreachable", "not-running")

# A join URL is <address>:<port>/<token>/<check>; a bare token is 32 or more hex characters.
_SECRET_IN_URL = re.compile(r"(:\d+/)[^\s/]+(/[^\s/'\"]*)?")
_BARE_TOKEN = re.compile(r"\b[0-9a-f]{32,}\b")


def redact(text: str) -> str:
    """``text`` with every join token replaced, for logs, errors and state comments."""
    return _BARE_TOKEN.sub("<token>", _SECRET_IN_URL.sub(r"\1<token>", text))


def parse_add_node(text: str) -> dict:
    """``{"token": "<token>/<check>", "urls": ["ip:port/token/check", ...]}`` from --format json or yaml."""
    stripped = text.strip()
    data = json.loads(stripped) if stripped.startswith("{") else yaml.safe_load(stripped)
    return {"token": str(data["token"]), "urls": [str(u) for u in data.get("urls") or []]}


def join_args(url: str, worker: bool = False) -> list[str]:
    return ["join", url, *(["--worker"] if worker else [])]


def classify_error(message: str) -> str:
    """
    One of ``invalid-token``, ``already-known``, ``hostname-unresolved``, ``unreachable``,
    ``not-running`` or ``other``.
    """
    lowered = message.lower()
    for kind, needles in _ERROR_KINDS:
        if any(needle in lowered for needle in needles):
            return kind
    return "other"


def parse_cluster_tokens(text: str) -> dict[str, int | None]:
    """
    $SNAP_DATA/credentials/cluster-tokens.txt: one ``<token>`` (single-use) or
    ``<token>|<expiry epoch>`` (reusable until then) per line, as add_token.py writes them.
    """
    tokens: dict[str, int | None] = {}
    for line in text.splitlines():
        token, _, expiry = line.strip().partition("|")
        if token:
            tokens[token] = int(expiry) if expiry.strip().isdigit() else None
    return tokens


def token_is_live(token: str, tokens: dict[str, int | None], now: float) -> bool:
    """True while microk8s still accepts ``token`` and it does not expire within the margin."""
    if token not in tokens:
        return False
    expiry = tokens[token]
    return expiry is None or expiry > now + constants.TOKEN_EXPIRY_MARGIN


def url_for(urls: list[str], address: str | None) -> str:
    """The join URL that reaches the master at ``address`` (its private one); else the first."""
    for url in urls:
        if address and url.split(":", 1)[0] == address:
            return url
    if not urls:
        raise CommandExecutionError("the master published a join token without any URL")
    return urls[0]


def _fail(key: str, problem: str, value) -> CommandExecutionError:
    return CommandExecutionError(f"pillar microk8s:{key} {problem}, got {value!r}")


def node_roles(settings: dict) -> dict:
    """
    Who is who in the cluster, from the ``microk8s`` pillar:

    - ``nodes``: every Kubernetes node as ``{id, address}`` (its private address), in order;
    - ``master``: the node that bootstraps the cluster and issues tokens (default: the first);
    - ``control_plane``: the dqlite voters (default: the first ``control_plane_size`` nodes,
      3 unless set, since microk8s HA needs three); everyone else joins as a worker.

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

    size = settings.get("control_plane_size", constants.CONTROL_PLANE_SIZE)
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise _fail("control_plane_size", "must be a whole number of at least 1", size)
    control_plane = settings.get("control_plane") or ids[:size]
    if not isinstance(control_plane, list):
        raise _fail("control_plane", "must be a list of node ids", control_plane)
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
