"""
The cluster's machines as the product lays them out (facts/hosts.ts, constructs/cluster-layout.ts,
docs/architecture.md "Addresses"): each machine's host name, its FQDN (its hostname, OpenStack
name and Salt minion id) in a test's domain, and its private address.

The facts are read from their homes, not copied: the host names, host numbers and control-plane
size from facts/'s ``HOST_NAMES``, ``HOST_NUMBERS`` and ``CONTROL_PLANE_SIZE``, the default
networks from config/parameters.ts. They are read as text because the Python suites run no
TypeScript. Only the way the layout combines them is written again here: worker n of the
default pool is ``<worker>-<n>``, at host number ``firstWorkerPrivate + n``, and the first nodes,
the master first, are the dqlite voters. test_render.py holds this to the pillar Terraform writes.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOSTS_FACTS = ROOT / "facts" / "hosts.ts"
CLUSTER_SIZE = ROOT / "facts" / "cluster-size.ts"
PARAMETERS = ROOT / "config" / "parameters.ts"


def _object_literal(path: Path, name: str) -> dict[str, str | int]:
    """``export const <name> = { key: value, … } as const;``, one string or number a line, comments aside."""
    found = re.search(rf"^export const {name} = \{{\n(.*?)^\}} as const;$", path.read_text(), re.M | re.S)
    lines = [line for line in found[1].splitlines() if not re.fullmatch(r"\s*(//.*|/?\*.*)?", line)] if found else []
    entries = [re.fullmatch(r'\s+(\w+): ("[^"]*"|\d+),', line) for line in lines]
    if not entries or not all(entries):
        raise LookupError(f"{path}: `export const {name}` is not an object of one string or number a line")
    return {entry[1]: json.loads(entry[2]) for entry in entries}


def _number(path: Path, name: str) -> int:
    found = re.search(rf"^export const {name} = (\d+);$", path.read_text(), re.M)
    if found is None:
        raise LookupError(f"{path} has no `export const {name} = <number>;`")
    return int(found[1])


def _default(source: str, variable: str) -> str:
    """A variable's string default in config/parameters.ts: the first ``default:`` of its entry."""
    found = re.search(rf'^  {variable}: \{{\n.*?^    default: "([^"]+)",$', source, re.M | re.S)
    if found is None:
        raise LookupError(f'{PARAMETERS} has no `default: "…"` for {variable}')
    return found[1]


_PARAMETERS_SOURCE = PARAMETERS.read_text()
HOST_NAMES = _object_literal(HOSTS_FACTS, "HOST_NAMES")
HOST_NUMBERS = _object_literal(HOSTS_FACTS, "HOST_NUMBERS")
CONTROL_PLANE_SIZE = _number(CLUSTER_SIZE, "CONTROL_PLANE_SIZE")
PUBLIC_CIDR = _default(_PARAMETERS_SOURCE, "public_network_cidr")
PRIVATE_CIDR = _default(_PARAMETERS_SOURCE, "private_network_cidr")


@dataclass(frozen=True)
class Machine:
    name: str
    """The host name, the FQDN's first label: a Kubernetes node's name."""
    fqdn: str
    """Hostname, OpenStack name and Salt minion id at once."""
    address: str
    """Its address on the private network."""
    public_address: str | None = None
    """Its fixed address on the public network, for the dual-homed bastion and Kubernetes master."""


class Layout:
    """The machines of a cluster in ``domain``, on the networks the product gives by default."""

    def __init__(self, domain: str, private_cidr: str = PRIVATE_CIDR, public_cidr: str = PUBLIC_CIDR) -> None:
        self.domain = domain
        self.private_network = ipaddress.ip_network(private_cidr)
        self.public_network = ipaddress.ip_network(public_cidr)

    @staticmethod
    def _host(network, number: int) -> str:
        # Terraform's cidrhost(): the network's address plus the host number.
        return str(network.network_address + number)

    def _machine(self, name: str, private_host: int, public_host: int | None = None) -> Machine:
        public = None if public_host is None else self._host(self.public_network, public_host)
        return Machine(name, f"{name}.{self.domain}", self._host(self.private_network, private_host), public)

    @property
    def salt_master(self) -> Machine:
        return self._machine(HOST_NAMES["saltMaster"], HOST_NUMBERS["saltMasterPrivate"])

    @property
    def bastion(self) -> Machine:
        return self._machine(HOST_NAMES["bastion"], HOST_NUMBERS["bastionPrivate"], HOST_NUMBERS["bastionPublic"])

    @property
    def master(self) -> Machine:
        """The Kubernetes master."""
        return self._machine(
            HOST_NAMES["kubeMaster"], HOST_NUMBERS["kubeMasterPrivate"], HOST_NUMBERS["kubeMasterPublic"]
        )

    def worker(self, n: int) -> Machine:
        """Worker ``n`` of the default pool."""
        return self._machine(f"{HOST_NAMES['worker']}-{n}", HOST_NUMBERS["firstWorkerPrivate"] + n)

    @staticmethod
    def pool_worker_name(pool: str, n: int) -> str:
        """Worker ``n`` of node pool ``pool``'s host name (Neutron gives its address, from the DHCP range)."""
        return f"{HOST_NAMES['poolWorker']}-{pool}-{n}"

    def kube_nodes(self, count: int) -> list[Machine]:
        """The default pool's ``count`` Kubernetes nodes: the master, then the workers."""
        return [self.master, *(self.worker(n) for n in range(count - 1))]

    def control_plane(self, count: int) -> list[Machine]:
        """The dqlite voters of a cluster of ``count`` nodes."""
        return self.kube_nodes(count)[:CONTROL_PLANE_SIZE]


def fake_nodes(*machines: Machine) -> dict[str, tuple[str, str]]:
    """Minion id → (address, host name) of each machine: how SaltCluster takes its fake microk8s nodes."""
    return {machine.fqdn: (machine.address, machine.name) for machine in machines}


# The domain the Salt tests deploy to, and their cluster in it.
DOMAIN = "lab.example"
LAB = Layout(DOMAIN)
