#!/usr/bin/env python3
"""
A fake ``microk8s`` CLI for the tests that run the real Salt loader. Each fake node keeps its
$SNAP_DATA in $FAKE_MICROK8S_DIR, with the files microk8s itself keeps there
(credentials/cluster-tokens.txt, var/lock/clustered.lock, certs/csr.conf.template) plus a
state.json for what a real node keeps in its services. Nodes find each other by address through
$FAKE_MICROK8S_CLUSTER, a directory of links named after each node's address: nothing goes over
a network.

What it reproduces, and where from (see __tests__/l4-salt/fixtures/microk8s/README.md for the output shapes):
- add-node appends ``<token>`` (single-use) or ``<token>|<expiry>`` (add_token.py);
- join checks, in the cluster agent's order (microk8s-cluster-agent, pkg/api/v2/join.go), the
  token (consumed at once when single-use, *before* the other checks), the joiner's hostname as
  the master resolves it ($FAKE_MICROK8S_DIR/etc-hosts stands in for the master's /etc/hosts when
  present), and whether dqlite already knows the joiner's address; errors are printed the way
  join.py relays them, with exit code 6; an unreachable master ends in a ConnectionRefusedError;
- a worker gets var/lock/clustered.lock, after which status prints only a message (exit 0);
- remove-node of a node unknown to Kubernetes exits 1 even when --force removed it from dqlite.
"""

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import sys
import time
from pathlib import Path

HOME = Path(os.environ["FAKE_MICROK8S_DIR"])
ADDRESS = os.environ.get("FAKE_MICROK8S_ADDRESS", "10.1.0.10")
HOSTNAME = os.environ.get("FAKE_MICROK8S_HOSTNAME", "k8s-master")
CLUSTER = Path(os.environ.get("FAKE_MICROK8S_CLUSTER", str(HOME / "cluster")))
AGENT_PORT = 25000
DQLITE_PORT = 19001
WORKER_LOCK = Path("var/lock/clustered.lock")
TOKENS = Path("credentials/cluster-tokens.txt")
ADDONS = {"dns": "disabled", "hostpath-storage": "disabled", "ha-cluster": "enabled", "registry": "disabled"}


def load(home: Path) -> dict:
    path = home / "state.json"
    if path.exists():
        return json.loads(path.read_text())
    return {"running": True, "addons": dict(ADDONS), "cluster": None, "address": None, "hostname": None}


def save(home: Path, state: dict) -> None:
    (home / "state.json").write_text(json.dumps(state, indent=1))


def database(home: Path, state: dict) -> dict:
    """The dqlite members and Kubernetes nodes, kept by the node that started the cluster."""
    path = home / "cluster.json"
    if path.exists():
        return json.loads(path.read_text())
    return {
        "members": [{"address": f"{state['address']}:{DQLITE_PORT}", "role": "voter"}],
        "nodes": [{"name": state["hostname"], "address": state["address"]}],
    }


def bootstrap(state: dict) -> Path:
    """The directory of the node holding this node's cluster database (itself when standalone)."""
    return (CLUSTER / state["cluster"]).resolve() if state["cluster"] else HOME


def register(state: dict) -> None:
    CLUSTER.mkdir(parents=True, exist_ok=True)
    link = CLUSTER / ADDRESS
    if not link.is_symlink():
        link.symlink_to(HOME)
    state.update(address=ADDRESS, hostname=HOSTNAME)
    template = HOME / "certs" / "csr.conf.template"
    if not template.exists():
        template.parent.mkdir(parents=True, exist_ok=True)
        template.write_text("[ alt_names ]\nDNS.1 = kubernetes\nIP.1 = 127.0.0.1\n#MOREIPS\n")


@contextlib.contextmanager
def locked(home: Path):
    """The cluster agent's mutexes: one change at a time to a node's tokens and database."""
    with (home / ".lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def worker_refusal() -> int:
    """microk8s-status.wrapper on a node joined with --worker: a message, exit 0 (1.28 and later)."""
    print("This MicroK8s deployment is acting as a node in a cluster.")
    print("Please use the control plane node.")
    return 0


def status(state: dict) -> int:
    if (HOME / WORKER_LOCK).exists():
        return worker_refusal()
    print("microk8s:")
    print(f"  running: {state['running']}")
    print("high-availability:")
    if not state["running"]:
        # status.py print_yaml with isReady false: the message under high-availability.
        print("  enabled: False")
        print("  message: microk8s is not running. Use microk8s inspect for a deeper inspection.")
        return 0
    print(f"  enabled: {state['addons'].get('ha-cluster') == 'enabled'}")
    members = database(bootstrap(state), state)["members"]
    print("  nodes:")
    for member in members:
        print(f"    - address: {member['address']}\n      role: {member['role']}")
    print("addons:")
    for name, addon_status in state["addons"].items():
        print(f"  - name: {name}\n    description: {name}\n    version: 1.28\n    status: {addon_status}")
    return 0


def add_node(state: dict, args: list[str]) -> int:
    if (HOME / WORKER_LOCK).exists():
        print(
            "This MicroK8s deployment is acting as a node in a cluster. Please use the microk8s add-node on the master."
        )
        return 1
    ttl = int(args[args.index("--token-ttl") + 1]) if "--token-ttl" in args else -1
    token = args[args.index("--token") + 1] if "--token" in args else secrets.token_hex(16)
    tokens = HOME / TOKENS
    tokens.parent.mkdir(parents=True, exist_ok=True)
    with tokens.open("a") as file:
        file.write(f"{token}|{int(time.time()) + ttl}\n" if ttl != -1 else f"{token}\n")
    check = hashlib.sha256(ADDRESS.encode()).hexdigest()[:12]
    print(json.dumps({"token": f"{token}/{check}", "urls": [f"{ADDRESS}:{AGENT_PORT}/{token}/{check}"]}, indent=2))
    return 0


def consume(master: Path, token: str) -> bool:
    """ConsumeClusterToken: valid if listed and not expired; a single-use token is removed at once."""
    path = master / TOKENS
    lines = path.read_text().splitlines() if path.exists() else []
    for line in lines:
        listed, _, expiry = line.partition("|")
        if listed != token:
            continue
        if expiry:
            return int(expiry) > time.time()
        path.write_text("".join(f"{kept}\n" for kept in lines if kept != line))
        return True
    return False


def resolves(hosts: str, hostname: str, address: str) -> bool:
    return any(line.split()[:1] == [address] and hostname in line.split()[1:] for line in hosts.splitlines())


def refused(message: str) -> int:
    print(f"Connection failed. {message}.")
    return 6


def join(state: dict, args: list[str]) -> int:
    host_port, token = args[0].split("/")[:2]
    host = host_port.split(":")[0]
    worker = "--worker" in args
    print(f"Contacting cluster at {host}")
    target = CLUSTER / host
    if not target.exists() or not load(target.resolve())["running"]:
        print("Traceback (most recent call last):", file=sys.stderr)
        print("ConnectionRefusedError: [Errno 111] Connection refused", file=sys.stderr)
        return 1
    master = target.resolve()
    with locked(master):
        return admit(state, master, token, worker)


def admit(state: dict, master: Path, token: str, worker: bool) -> int:
    if not consume(master, token):
        return refused("invalid token (500)")
    hosts = master / "etc-hosts"
    if hosts.exists() and not resolves(hosts.read_text(), HOSTNAME, ADDRESS):
        return refused(
            f'the hostname ({HOSTNAME}) of the joining node does not resolve to the IP "{ADDRESS}". Refusing join (400)'
        )
    master_state = load(master)
    db = database(master, master_state)
    # Only dqlite members are checked: a rebuilt worker (never a member) simply joins again.
    if any(m["address"].startswith(f"{ADDRESS}:") for m in db["members"]):
        return refused(f"the joining node ({ADDRESS}) is already known to dqlite (504)")
    if not worker:
        voters = sum(1 for m in db["members"] if m["role"] == "voter")
        db["members"].append({"address": f"{ADDRESS}:{DQLITE_PORT}", "role": "voter" if voters < 3 else "standby"})
    db["nodes"] = [n for n in db["nodes"] if n["address"] != ADDRESS] + [{"name": HOSTNAME, "address": ADDRESS}]
    (master / "cluster.json").write_text(json.dumps(db, indent=1))
    state["cluster"] = master_state["address"]
    if worker:
        (HOME / WORKER_LOCK).parent.mkdir(parents=True, exist_ok=True)
        (HOME / WORKER_LOCK).touch()
        print("The node has joined the cluster and will appear in the nodes list in a few seconds.")
    else:
        print("Successfully joined the cluster.")
    return 0


def leave(state: dict) -> int:
    if not state["cluster"]:
        print("This node is not part of a cluster.")
        return 1
    master = bootstrap(state)
    db = database(master, load(master))
    db["members"] = [m for m in db["members"] if not m["address"].startswith(f"{ADDRESS}:")]
    db["nodes"] = [n for n in db["nodes"] if n["address"] != ADDRESS]
    (master / "cluster.json").write_text(json.dumps(db, indent=1))
    state["cluster"] = None
    (HOME / WORKER_LOCK).unlink(missing_ok=True)
    return 0


def remove_node(state: dict, args: list[str]) -> int:
    """remove_node.py: by name or InternalIP; --force also drops the dqlite member."""
    if (HOME / WORKER_LOCK).exists():
        print("This MicroK8s deployment is acting as a node in a cluster. Please use microk8s leave.")
        return 1
    node, force = args[0], "--force" in args
    db = database(HOME, state)
    found = next((n for n in db["nodes"] if node in (n["name"], n["address"])), None)
    address = found["address"] if found else node
    in_dqlite = any(m["address"].startswith(f"{address}:") for m in db["members"])
    if found and in_dqlite and not force:
        advice = "Please, run first 'microk8s leave' on the departing node."
        print(f"Removal failed. Node {node} is registered with dqlite. {advice}")
        return 1
    if force:
        db["members"] = [m for m in db["members"] if not m["address"].startswith(f"{address}:")]
    db["nodes"] = [n for n in db["nodes"] if n is not found]
    (HOME / "cluster.json").write_text(json.dumps(db, indent=1))
    if not found:
        print(f"Node {node} does not exist in Kubernetes.")
        if force and in_dqlite:
            print(f"Attempting to remove {node} from dqlite.")
            print("Removing node entry found in dqlite.")
        return 1
    return 0


def kubectl_nodes(state: dict) -> int:
    items = []
    for node in database(bootstrap(state), state)["nodes"]:
        link = CLUSTER / node["address"]
        ready = link.exists() and load(link.resolve())["running"]
        items.append(
            {
                "metadata": {"name": node["name"]},
                "status": {
                    "addresses": [{"type": "InternalIP", "address": node["address"]}],
                    "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}],
                },
            }
        )
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return 0


def main(args: list[str]) -> int:
    HOME.mkdir(parents=True, exist_ok=True)
    state = load(HOME)
    register(state)
    with (HOME / "calls.log").open("a") as log:
        log.write(" ".join(args) + "\n")
    command = args[0] if args else ""
    if command == "status" and "--wait-ready" in args:
        code = 0 if state["running"] else 1
    elif command == "status":
        code = status(state)
    elif command in ("start", "stop"):
        state["running"] = command == "start"
        code = 0
    elif command in ("enable", "disable") and len(args) == 2:
        name = args[1].split(":", 1)[0]
        if name not in state["addons"]:
            print(f"Addon {name} was not found in any repository", file=sys.stderr)
            return 1
        state["addons"][name] = "enabled" if command == "enable" else "disabled"
        print(f"{command.capitalize()}d {name}")
        code = 0
    elif command == "add-node":
        with locked(HOME):
            code = add_node(state, args[1:])
    elif command == "join":
        code = join(state, args[1:])
    elif command == "leave":
        code = leave(state)
    elif command == "remove-node":
        with locked(HOME):
            code = remove_node(state, args[1:])
    elif args[:3] == ["kubectl", "get", "nodes"]:
        code = kubectl_nodes(state)
    else:
        print(f"fake microk8s: unsupported {args}", file=sys.stderr)
        return 2
    save(HOME, state)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
