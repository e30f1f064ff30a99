#!/usr/bin/python3
"""
The rehearsal's microk8s and snap: a fake that keeps state like the real one and talks between
hosts only over the network, through a cluster agent on port 25000, as microk8s does since 1.25
(canonical/microk8s-cluster-agent). Installed into every host's image as /usr/bin/snap,
/usr/bin/microk8s and /snap/bin/microk8s (install.sh).

State, under the real paths:
- $SNAP_DATA (/var/snap/microk8s/current): fake/node.json (installed, running, the cluster's
  agent address), credentials/cluster-tokens.txt, var/lock/clustered.lock, certs/csr.conf.template;
- on the node that started the cluster, fake/cluster.json: the dqlite members (address, role),
  the Kubernetes nodes (name, InternalIP) and the cluster's addons. Other nodes read and change it
  only through that node's agent.

Behaviour, each from the microk8s 1.28 source it follows (canonical/microk8s branch 1.28, and
canonical/microk8s-cluster-agent; where the current release differs it says so):
- status (scripts/wrappers/status.py print_yaml): `--format yaml` prints microk8s.running,
  high-availability (enabled while the ha-cluster addon is, then every dqlite member with its
  role) and the addons, enabled first; a stopped node prints `microk8s is not running, try microk8s start` and
  exits 0 (common/utils.py exit_if_stopped); on a node joined with --worker the wrapper
  (microk8s-resources/wrappers/microk8s-status.wrapper) prints that the node is part of a cluster
  and to use the control plane node, and exits 0 (1.28 and the current master alike);
- enable/disable (scripts/wrappers/enable.py): refused on a worker by is_cluster_locked ("Please
  use the master node.", exit 1), and on a stopped node by ensure_started (exit 1); addons are
  the cluster's, kept with its database, so every control-plane node sees them;
- add-node (scripts/wrappers/add_token.py): a 32-character token, `<token>` in
  cluster-tokens.txt when single-use (--token-ttl -1, the default), `<token>|<expiry>` otherwise;
  `--format json` prints the token with its check and one URL per address of the node;
- join (scripts/wrappers/join.py → the agent's pkg/api/v2/join.go): the token is consumed first
  (a single-use one is gone even when the join then fails), then expiry, then whether the
  joiner's hostname resolves on the agent's node to the address it connects from (HTTP 400),
  then whether dqlite already knows that address (HTTP 504); failures print `Connection failed.
  <message> (<status>).` and exit 6; a control-plane joiner becomes a voter while there are
  fewer than 3, a standby after; `--worker` joins no dqlite and gets var/lock/clustered.lock;
- remove-node (scripts/wrappers/remove_node.py): by name or InternalIP; a node still in dqlite
  needs --force; a node Kubernetes does not know exits 1, after --force dropped its member;
- leave (scripts/wrappers/leave.py): the node goes back to a cluster of its own; the Kubernetes
  node stays, NotReady, until remove-node;
- kubectl get nodes -o json: a node is Ready while its agent answers (a stopped or powered-off
  host is not).
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(os.environ.get("FAKE_MICROK8S_ROOT", "/"))
SNAP_DATA = ROOT / "var/snap/microk8s/current"
SNAP_COMMON = ROOT / "var/snap/microk8s/common"
NODE = SNAP_DATA / "fake/node.json"
CLUSTER = SNAP_DATA / "fake/cluster.json"
TOKENS = SNAP_DATA / "credentials/cluster-tokens.txt"
WORKER_LOCK = SNAP_DATA / "var/lock/clustered.lock"
CSR_TEMPLATE = SNAP_DATA / "certs/csr.conf.template"
AGENT_LOG = SNAP_DATA / "fake/agent.log"
PORT = int(os.environ.get("FAKE_MICROK8S_PORT", "25000"))
DQLITE_PORT = 19001
LOCK = threading.Lock()
# microk8s 1.28's core addons (microk8s-core-addons, addons.yaml), as status lists them.
ADDONS = [
    "cert-manager", "community", "dashboard", "dns", "gpu", "ha-cluster", "helm", "helm3",
    "host-access", "hostpath-storage", "ingress", "kube-ovn", "mayastor", "metallb",
    "metrics-server", "minio", "observability", "prometheus", "rbac", "registry", "storage",
]  # fmt: skip
NOT_RUNNING = "microk8s is not running. Use microk8s inspect for a deeper inspection."
# common/utils.py exit_if_stopped (status, exit 0) and ensure_started (others, stderr, exit 1).
STOPPED = "microk8s is not running, try microk8s start"
# microk8s-status.wrapper on a node joined with --worker, before status.py runs (1.28 and
# current alike: exit 0).
WORKER_STATUS = "This MicroK8s deployment is acting as a node in a cluster.\nPlease use the control plane node."
# common/utils.py is_cluster_locked, which enable.py and disable.py call first (exit 1).
WORKER_LOCKED = "This MicroK8s deployment is acting as a node in a cluster.\nPlease use the master node."


def read(path: Path, default):
    return json.loads(path.read_text()) if path.exists() else default


def write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def node() -> dict:
    return read(NODE, {"installed": False, "running": False, "agent": None, "channel": None})


def addresses() -> list[str]:
    """The node's IPv4 addresses (add_token.py's get_network_info lists them all)."""
    output = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True
    ).stdout
    return [line.split()[3].split("/")[0] for line in output.splitlines()]


def hostname() -> str:
    return socket.gethostname()


def node_ip() -> str:
    """kubelet's InternalIP: the address of the interface with the default route."""
    route = subprocess.run(
        ["ip", "-4", "-o", "route", "show", "default"], capture_output=True, text=True
    ).stdout.split()
    device = route[route.index("dev") + 1] if "dev" in route else None
    output = subprocess.run(["ip", "-4", "-o", "addr", "show", *(["dev", device] if device else []), "scope", "global"],
                            capture_output=True, text=True).stdout  # fmt: skip
    return output.split()[3].split("/")[0] if output else "127.0.0.1"


def own_cluster() -> dict:
    """A node's own cluster: dqlite bound to 127.0.0.1 until the first join (microk8s' default)."""
    return {
        "members": [{"address": f"127.0.0.1:{DQLITE_PORT}", "role": "voter"}],
        "nodes": [{"name": hostname(), "address": node_ip()}],
        "addons": {name: "enabled" if name == "ha-cluster" else "disabled" for name in ADDONS},
    }


# --- the agent ----------------------------------------------------------------------------------


def request(address: str, path: str, body: dict | None = None, timeout: float = 10) -> tuple[int, dict]:
    data = json.dumps(body or {}).encode()
    req = urllib.request.Request(f"http://{address}:{PORT}{path}", data=data, method="POST")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def consume(token: str) -> bool:
    """pkg/snap/snap.go ConsumeClusterToken: a listed, unexpired token; single-use ones are removed."""
    lines = TOKENS.read_text().splitlines() if TOKENS.exists() else []
    for line in lines:
        listed, _, expiry = line.partition("|")
        if listed != token:
            continue
        if expiry:
            return int(expiry) > time.time()
        TOKENS.write_text("".join(f"{kept}\n" for kept in lines if kept != line))
        return True
    return False


def resolves(name: str, address: str) -> bool:
    try:
        return address in {info[4][0] for info in socket.getaddrinfo(name, None, socket.AF_INET)}
    except OSError:
        return False


class Agent(http.server.BaseHTTPRequestHandler):
    def log_message(self, format, *args):
        with AGENT_LOG.open("a") as log:
            log.write(f"{self.address_string()} {format % args}\n")

    def reply(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with LOCK:
            status, answer = self.handle_path(self.path, body)
        self.reply(status, answer)

    def handle_path(self, path: str, body: dict) -> tuple[int, dict]:
        if path == "/health":
            return 200, {"running": node()["running"]}
        if not node()["running"]:
            return 503, {"error": "microk8s is not running"}
        if path == "/join":
            return self.join(body)
        if path == "/cluster":
            return 200, read(CLUSTER, own_cluster())
        if path == "/update":
            write(CLUSTER, body)
            return 200, {}
        return 404, {"error": f"no {path}"}

    def join(self, body: dict) -> tuple[int, dict]:
        """join.go, Join: the token first, then the hostname, then dqlite."""
        joiner = self.client_address[0]
        if not consume(str(body.get("token"))):
            return 500, {"error": "invalid token"}
        name = str(body.get("hostname"))
        if not resolves(name, joiner):
            return 400, {
                "error": f"the hostname ({name}) of the joining node does not resolve to the IP "
                f'"{joiner}". Refusing join'
            }
        cluster = read(CLUSTER, own_cluster())
        # join.go: the first join moves dqlite from 127.0.0.1 to the address the joiner used.
        local = self.connection.getsockname()[0]
        for member in cluster["members"]:
            if member["address"] == f"127.0.0.1:{DQLITE_PORT}":
                member["address"] = f"{local}:{DQLITE_PORT}"
        if any(m["address"] == f"{joiner}:{DQLITE_PORT}" for m in cluster["members"]):
            return 504, {"error": f"the joining node ({joiner}) is already known to dqlite"}
        if not body.get("worker"):
            voters = sum(1 for m in cluster["members"] if m["role"] == "voter")
            cluster["members"].append(
                {"address": f"{joiner}:{DQLITE_PORT}", "role": "voter" if voters < 3 else "standby"}
            )
        cluster["nodes"] = [n for n in cluster["nodes"] if n["address"] != joiner] + [{"name": name, "address": joiner}]
        write(CLUSTER, cluster)
        return 200, {"agent": self.connection.getsockname()[0]}


def serve() -> None:
    server = http.server.ThreadingHTTPServer(("0.0.0.0", PORT), Agent)
    server.serve_forever()


def start_agent() -> None:
    """snap.microk8s.daemon-cluster-agent: started detached, so the caller's output closes."""
    if agent_up("127.0.0.1"):
        return
    AGENT_LOG.parent.mkdir(parents=True, exist_ok=True)
    with AGENT_LOG.open("a") as log:
        subprocess.Popen([sys.executable, os.path.realpath(__file__), "agent"], stdin=subprocess.DEVNULL,
                         stdout=log, stderr=log, start_new_session=True)  # fmt: skip
    for _ in range(50):
        if agent_up("127.0.0.1"):
            return
        time.sleep(0.1)
    raise SystemExit("fake microk8s: the cluster agent did not start")


def agent_up(address: str) -> bool:
    try:
        return request(address, "/health", timeout=1)[0] == 200
    except OSError:
        return False


# --- the CLI ------------------------------------------------------------------------------------


def cluster_agent(state: dict) -> str:
    """The agent holding this node's cluster database: the one it joined, or its own."""
    return state["agent"] or "127.0.0.1"


def cluster(state: dict) -> dict:
    return request(cluster_agent(state), "/cluster")[1]


def update(state: dict, data: dict) -> None:
    request(cluster_agent(state), "/update", data)


def is_worker() -> bool:
    return WORKER_LOCK.exists()


def status(state: dict, args: list[str]) -> int:
    if "--wait-ready" in args:
        timeout = int(args[args.index("--timeout") + 1]) if "--timeout" in args else 0
        deadline = time.time() + timeout
        while not node()["running"]:
            if timeout and time.time() > deadline:
                print(NOT_RUNNING)
                return 1
            time.sleep(1)
        return 0
    if is_worker():
        print(WORKER_STATUS)
        return 0
    if not state["running"]:
        print(STOPPED)
        return 0
    data = cluster(state)
    # status.py print_yaml, column for column (Python's True/False included). "enabled" is
    # common/utils.py is_ha_enabled(): the ha-cluster addon, not whether 3 voters formed; the
    # members are listed whenever it is on (get_dqlite_info).
    ha_enabled = data["addons"].get("ha-cluster") == "enabled"
    print(f"microk8s:\n  running: True\nhigh-availability:\n  enabled: {ha_enabled}")
    if ha_enabled:
        print("  nodes:")
        for member in data["members"]:
            print(f"    - address: {member['address']}\n      role: {member['role']}")
    print("addons:")
    for wanted in ("enabled", "disabled"):
        for name, addon_status in sorted(data["addons"].items()):
            if addon_status == wanted:
                print(
                    f"  - name: {name}\n    repository: core\n    description: {name}\n"
                    f"    version: 1.28.15\n    status: {wanted}"
                )
    return 0


def addon(state: dict, command: str, args: list[str]) -> int:
    if is_worker():
        print(WORKER_LOCKED)
        return 1
    data = cluster(state)
    for spec in args:
        name = spec.split(":", 1)[0]
        if name not in data["addons"]:
            print(f"Addon {name} was not found in any repository", file=sys.stderr)
            return 1
        data["addons"][name] = "enabled" if command == "enable" else "disabled"
        print(f"Addon {name} is {'enabled' if command == 'enable' else 'disabled'}")
    update(state, data)
    return 0


def add_node(state: dict, args: list[str]) -> int:
    ttl = int(args[args.index("--token-ttl") + 1]) if "--token-ttl" in args else -1
    token = args[args.index("--token") + 1] if "--token" in args else secrets.token_hex(16)
    TOKENS.parent.mkdir(parents=True, exist_ok=True)
    with TOKENS.open("a") as tokens:
        tokens.write(f"{token}|{int(time.time()) + ttl}\n" if ttl != -1 else f"{token}\n")
    check = secrets.token_hex(16) if not (SNAP_DATA / "fake/check").exists() else (SNAP_DATA / "fake/check").read_text()
    (SNAP_DATA / "fake/check").write_text(check)
    urls = [f"{address}:{PORT}/{token}/{check}" for address in addresses()]
    if "--format" in args and args[args.index("--format") + 1] == "json":
        print(json.dumps({"token": f"{token}/{check}", "urls": urls}))
    else:
        print("From the node you wish to join to this cluster, run the following:")
        print(f"microk8s join {urls[0]}")
    return 0


def join(state: dict, args: list[str]) -> int:
    url = args[0]
    address, token = url.split(":", 1)[0], url.split("/")[1]
    worker = "--worker" in args
    print(f"Contacting cluster at {address}")
    # join.py get_connection_info: only HTTPException is caught; a refused connection is a traceback.
    status_code, answer = request(
        address, "/join", {"token": token, "hostname": hostname(), "worker": worker}, timeout=30
    )
    if status_code != 200:
        print(f"Connection failed. {answer.get('error')} ({status_code}).")
        return 6
    state["agent"] = address
    # A join resets the node to the cluster's: its own database and addons are gone.
    CLUSTER.unlink(missing_ok=True)
    if worker:
        WORKER_LOCK.parent.mkdir(parents=True, exist_ok=True)
        WORKER_LOCK.touch()
        print("The node has joined the cluster and will appear in the nodes list in a few seconds.")
    else:
        print("Successfully joined the cluster.")
    write(NODE, state)
    return 0


def leave(state: dict) -> int:
    if not state["agent"]:
        print("This node is not part of a cluster.")
        return 1
    if not is_worker():
        data = cluster(state)
        own = {f"{address}:{DQLITE_PORT}" for address in addresses()}
        data["members"] = [m for m in data["members"] if m["address"] not in own]
        update(state, data)
    state["agent"] = None
    WORKER_LOCK.unlink(missing_ok=True)
    write(NODE, state)
    print("Generating new cluster certificates.\nWaiting for node to start.")
    return 0


def remove_node(state: dict, args: list[str]) -> int:
    if is_worker():
        print(WORKER_LOCKED)
        return 1
    target, force = args[0], "--force" in args
    data = cluster(state)
    found = next((n for n in data["nodes"] if target in (n["name"], n["address"])), None)
    address = found["address"] if found else target
    member = f"{address}:{DQLITE_PORT}"
    in_dqlite = any(m["address"] == member for m in data["members"])
    if found and in_dqlite and not force:
        print(
            f"Removal failed. Node {target} is registered with dqlite. "
            "Please, run first 'microk8s leave' on the departing node."
        )
        return 1
    if force:
        data["members"] = [m for m in data["members"] if m["address"] != member]
    data["nodes"] = [n for n in data["nodes"] if n is not found]
    update(state, data)
    if not found:
        print(f"Node {target} does not exist in Kubernetes.")
        if force and in_dqlite:
            print(f"Attempting to remove {target} from dqlite.\nRemoving node entry found in dqlite.")
        return 1
    return 0


def kubectl(state: dict, args: list[str]) -> int:
    if args[:2] != ["get", "nodes"]:
        print(f"fake microk8s: kubectl {' '.join(args)} is not reproduced", file=sys.stderr)
        return 2
    items = []
    for entry in cluster(state)["nodes"]:
        try:
            ready = request(entry["address"], "/health", timeout=2)[1].get("running") is True
        except OSError:
            ready = False
        items.append({
            "metadata": {"name": entry["name"]},
            "status": {
                "addresses": [{"type": "InternalIP", "address": entry["address"]}],
                "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown"}],
            },
        })  # fmt: skip
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return 0


def snap(args: list[str]) -> int:
    state = node()
    if args[:2] == ["list", "microk8s"]:
        if not state["installed"]:
            print("error: no matching snaps installed", file=sys.stderr)
            return 1
        print(
            "Name      Version   Rev   Tracking       Publisher   Notes\n"
            f"microk8s  v1.28.15  7000  {state['channel']}  canonical✓  classic"
        )
        return 0
    if args[:2] == ["install", "microk8s"]:
        if state["installed"]:
            print('snap "microk8s" is already installed')
            return 0
        channel = next((a.split("=", 1)[1] for a in args if a.startswith("--channel=")), "latest/stable")
        # The launch configuration is read once, at install (microk8s' snap/hooks/install).
        launch = SNAP_COMMON / ".microk8s.yaml"
        state.update(
            installed=True, running=True, channel=channel, launch=launch.read_text() if launch.exists() else None
        )
        CSR_TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
        CSR_TEMPLATE.write_text("[ alt_names ]\nDNS.1 = kubernetes\nIP.1 = 127.0.0.1\nIP.2 = 10.152.183.1\n#MOREIPS\n")
        write(NODE, state)
        start_agent()
        print("microk8s (1.28/stable) v1.28.15 from Canonical✓ installed")
        return 0
    print(f"fake snap: unsupported {args}", file=sys.stderr)
    return 2


def main(argv: list[str]) -> int:
    program = os.path.basename(argv[0])
    args = argv[1:]
    if program == "snap":
        return snap(args)
    if args[:1] == ["agent"]:
        serve()
        return 0
    if args[:1] == ["microk8s-health"]:
        # LSB status: 0 running, 3 not running.
        return 0 if node()["running"] and agent_up("127.0.0.1") else 3
    state = node()
    if not state["installed"]:
        print("microk8s: command not found", file=sys.stderr)
        return 127
    command, rest = (args[0], args[1:]) if args else ("", [])
    if command == "status":
        return status(state, rest)
    if command in ("start", "stop"):
        state["running"] = command == "start"
        write(NODE, state)
        if command == "start":
            start_agent()
        return 0
    if command == "refresh-certs":
        print("Taking a backup of the current certificates under /var/snap/microk8s/7000/certs-backup/")
        return 0
    if not state["running"]:
        print(STOPPED, file=sys.stderr)
        return 1
    handlers = {
        "enable": lambda: addon(state, "enable", rest),
        "disable": lambda: addon(state, "disable", rest),
        "add-node": lambda: add_node(state, rest),
        "join": lambda: join(state, rest),
        "leave": lambda: leave(state),
        "remove-node": lambda: remove_node(state, rest),
        "kubectl": lambda: kubectl(state, rest),
    }
    if command not in handlers:
        print(f"fake microk8s: unsupported {args}", file=sys.stderr)
        return 2
    return handlers[command]()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
