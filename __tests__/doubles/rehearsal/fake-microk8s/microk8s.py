#!/usr/bin/python3
"""
The rehearsal's microk8s and snap: a fake that keeps state like the real one and talks between
hosts only over the network, through a cluster agent on port 25000, as microk8s does since 1.25
(canonical/microk8s-cluster-agent). Installed into every host's image, where /usr/bin/snap,
/usr/bin/microk8s and /snap/bin/microk8s run it through run.py (install.sh). What it answers, and
the microk8s, snapd, dqlite and kubectl source each answer follows, is the core it shares with
the L4 fake (__tests__/doubles/microk8s_core: status.py, tokens.py, join.py, leave.py,
remove_node.py, kubectl.py, node_objects.py, kube_objects.py, cloud_controller.py, dqlite.py,
server_cert.py, snapd.py, releases.py, faults.py); this file keeps the node's state, its agent,
and the database as the hosts replicate it.

State, under the real paths:
- $SNAP_DATA (/var/snap/microk8s/current), as layout.py lays it out: fake/node.json (installed,
  running, the channel, the cluster's agent address, the id of the cluster the node belongs to),
  the join tokens, the worker lock, certs/csr.conf.template with csr.conf rendered from it and
  certs/server.crt issued from that (its subjectAltName lists every DNS.n and IP.n of csr.conf,
  the extra SANs Salt writes into the template among them, after `refresh-certs --cert
  server.crt`), and the CA, certs/ca.crt and ca.key (real X.509: server_cert.py);
- fake/cluster.json on every voter and stand-by: its copy of the cluster database (the cluster
  id, an index raised by every write, the dqlite members with their roles, the Kubernetes nodes
  with name, InternalIP, the kubelet version last reported and unschedulable, the cluster's
  addons and other objects); the install and leave write the cluster of its own a node starts
  with (dqlite on 127.0.0.1, the node its only voter), a join replaces it, a demotion to spare
  drops it;
- fake/quorum.log: every moment a command on this node or another found no majority of voters;
- fake/voter-removals.log: every `remove-node --force` run here that removed a voter while its
  node was Ready (remove_node.py refuses none of them, so neither does the fake).

The database (dqlite), replicated as k8s-dqlite has it; nodes reach each other's copies only
through their agents (POST /cluster: the copy; /update: a replicated write, or the copy dropped
when the node becomes a spare; /record: a quorum.log line; /quorum: the quorum query below):
- voters and stand-bys keep a copy, spares and workers none (go-dqlite client NodeRole: a
  stand-by replicates without voting, a spare does neither);
- a read or a write needs a majority of the voters listed in the freshest copy (highest index)
  among the nodes that answer (Raft, in the canonical/raft library dqlite embeds; reads go to
  the leader too, which go-dqlite's driver looks up); a write then goes to every reachable voter
  and stand-by, and a node that was down reads the freshest copy when it is back. The leader
  orders the writes, each at the next index of its log: a write read at an index another took
  since is read and made again (commit). A command writes only the objects it changed, as the
  API server writes each object on its own (rebase): two nodes removed at once both go. A member
  answers while its agent does, its microk8s runs and its /health reports this cluster's id (a
  machine rebuilt at the same address runs a cluster of its own); a node restarting after a
  refresh still answers (k8s-dqlite comes back at once, the API server does not);
- roles as go-dqlite's leader sets them, who keeps a copy, the majority rule and leave's
  refusal: dqlite.py, one model for both fakes. So 2 control-plane nodes are a voter and a
  spare: losing the spare loses nothing, losing the voter loses the quorum;
- without a majority (canonical/microk8s #3735: "If you drop below 2 nodes the cluster will
  freeze"): status prints print_yaml(isReady=False) with `nodes:` empty (get_dqlite_info's
  `dqlite .cluster` fails its 10 tries; it also lists nobody on a node the leader does not list)
  and exits 1, and `status --wait-ready` waits (wait_for_ready polls is_cluster_ready); kubectl,
  enable and disable get the API server's 504; add-node still writes its token (add_token.py is
  local); the agent still answers a control-plane join (join.go reads the local cluster.yaml,
  which needs no quorum) and the joiner's update_dqlite waits in vain, exit 0, not a member; a
  worker's join gets HTTP 500; leave and remove-node end in a CalledProcessError traceback from
  their `dqlite .cluster` (join.py, leave.py, remove_node.py, kubectl.py);
- every time a command or an agent finds no majority, a line goes to fake/quorum.log on this node
  and on every other member that answers: `<UTC time> quorum lost: <k>/<n> voters reachable
  (<voters>); on <address>: <command>`. `microk8s fake-quorum` (not a microk8s command) prints
  {"quorum", "cluster", "voters", "reachable", "index"} and exits 0 with a quorum, 1 without
  (recorded like any other finding); the agent's POST /quorum answers the same JSON.

What this fake does its own way:
- status on a stopped node is exit_if_stopped's message, exit 0; high availability is enabled
  while the ha-cluster addon is in the freshest copy this node saw; the addons (microk8s 1.28's
  core addons) are the cluster's, kept with its database so that every control-plane node sees
  them, and listed enabled first, each from the core repository;
- enable, disable and remove-node are refused on a worker (is_cluster_locked, exit 1); on a
  stopped node, kubectl and the commands that change the cluster are (ensure_started, exit 1);
- add-node: `--format json` prints the token with its check and one URL per address of the node,
  otherwise join's command line;
- join: the joiner posts to the agent (join.py's get_connection_info: only HTTPException is
  caught, so a refused connection is a traceback); the agent's /certificate stands in for the
  certificate the TLS handshake presents; a control-plane joiner gets its role from go-dqlite;
- kubectl get nodes -o json: a node is Ready while its agent answers, its microk8s runs (not
  restarting) and it belongs to this cluster: its agent's /health reports the cluster id. A
  kubelet posts its node's status to the API server of the cluster it joined (the credentials
  join.py writes, which leave.py's reinit replaces); when the posts stop, the node lifecycle
  controller (kubernetes pkg/controller/nodelifecycle, "Kubelet stopped posting node status.")
  sets Ready to Unknown. So a machine rebuilt at the same address, with a cluster of its own, is
  not Ready in the old cluster until it joins again. status.nodeInfo.bootID is its machine's
  boot while Ready (BOOT_ID below: a new machine under the same name reports another one; the
  last one reported is not kept for a node that is not Ready, where the API server keeps it);
- the OpenStack cloud controller manager (cloud_controller.py) asks for the project's servers as
  the rehearsal's cloud lists them on every host (NOVA_SERVERS);
- THE RECORD a rehearsal check reads (kube_objects.record): after every change of objects other
  than Nodes, the node that ran kubectl writes $SNAP_DATA/fake/objects.json
  (/var/snap/microk8s/current/fake/objects.json; Salt applies from the Kubernetes master, so
  that host's), a JSON map "<Kind>/<namespace>/<name>" (the namespace empty for a
  cluster-scoped kind, e.g. "StorageClass//cinder") -> the object as the API server keeps it:
  "Secret/kube-system/cloud-config" has data["cloud.conf"] base64-encoded; `enable
  hostpath-storage` adds the addon's default StorageClass microk8s-hostpath;
- the API server's TLS: a control-plane node's agent also listens on 16443 while microk8s runs
  and completes a TLS handshake with certs/server.crt and server.key (kube-apiserver's
  --tls-cert-file, default-args/kube-apiserver), so a client verifies the certificate against
  the cluster CA under any address it names; nothing answers behind the handshake;
- the address each API server advertises: read from $SNAP_DATA/args/kube-apiserver whenever
  kubelite starts (install, start, `snap restart`, refresh): --advertise-address, else the
  default route's address (kube_objects.advertised_address cites kube-apiserver's rule), and
  `kubectl get endpoints kubernetes` (namespace default) lists those of the control-plane nodes
  whose kubelite runs in this cluster, as the lease reconciler keeps them;
- config (microk8s-resources/wrappers/microk8s-config.wrapper): on a --worker node (its
  clustered.lock) "This MicroK8s deployment is acting as a node in a cluster. Please use the
  microk8s config on the master.", exit 0; otherwise credentials/client.config
  (microk8s-resources/client.config.template: cluster microk8s-cluster with the CA's data,
  context microk8s, user admin) with 127.0.0.1 replaced by the address of the interface with the
  default route (utils.sh get_default_ip), then an empty line;
- snap: `snap install microk8s` without a channel tracks latest/stable, taken as 1.28
  (releases.py); `microk8s fake-auto-refresh` (not a microk8s command) is snapd's auto-refresh
  (snapd.py).

Faults a test injects through $SNAP_DATA/fake/faults.json (faults.py):
- "status_dqlite_empty": N: the node's next N status outputs print `nodes:` with no member while
  high availability is on (common/utils.py get_dqlite_info returns [] once its dqlite query has
  failed its 10 tries);
- "join_dqlite_error": N, with "join_dqlite_error_text": the node's agent answers its next N
  joins, after spending the token and checking the hostname, with HTTP 500 (join.py);
- "restart_seconds": the not-ready window after a snap refresh or a kubelite restart (snapd.py).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

# The core both fakes share, microk8s_core, two folders up: __tests__/doubles in the repository,
# /usr/local/lib/koo-doubles in a host's image, which keeps that layout (install.sh).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from microk8s_core import (
    cloud_controller,
    dqlite,
    faults,
    join,
    kube_objects,
    kubectl,
    layout,
    leave,
    node_objects,
    remove_node,
    server_cert,
    snapd,
    status,
    tokens,
)
from microk8s_core.cli import emit
from microk8s_core.layout import read_json as read
from microk8s_core.layout import write_json as write
from microk8s_core.releases import DEFAULT_VERSION, minor, release, version

ROOT = Path(os.environ.get("FAKE_MICROK8S_ROOT", "/"))
SNAP_DATA = ROOT / "var/snap/microk8s/current"
SNAP_COMMON = ROOT / "var/snap/microk8s/common"
NODE = SNAP_DATA / "fake/node.json"
CLUSTER = SNAP_DATA / "fake/cluster.json"
TOKENS = SNAP_DATA / layout.TOKENS
WORKER_LOCK = SNAP_DATA / layout.WORKER_LOCK
CSR_TEMPLATE = SNAP_DATA / layout.CSR_TEMPLATE
AGENT_LOG = SNAP_DATA / "fake/agent.log"
SERVER_CRT = SNAP_DATA / layout.SERVER_CRT
SERVER_KEY = SNAP_DATA / layout.SERVER_KEY
CA_CRT = SNAP_DATA / layout.CA_CRT
KUBELET_ARGS = SNAP_DATA / layout.KUBELET_ARGS
# The project's Nova servers, as the rehearsal's cloud (cloud.ts) lists them on every host: what
# the modelled cloud controller manager asks (cloud_controller.py).
NOVA_SERVERS = ROOT / "var/lib/koo-rehearsal/nova-servers.json"
# The API server's arguments, which kubelite reads as it starts (kube_objects.py: the defaults,
# and the address the API server advertises from them).
APISERVER_ARGS = SNAP_DATA / layout.APISERVER_ARGS
# The machine's boot id. The kubelet reports it as status.nodeInfo.bootID (kubernetes
# pkg/kubelet/nodestatus/setters.go MachineInfo: NodeInfo.BootID is cadvisor's MachineInfo.BootID,
# read from /proc/sys/kernel/random/boot_id, new at every boot). The rehearsal's machines share
# one kernel, so one /proc boot id; each keeps its own in its /run, a tmpfs that every start of
# the machine mounts afresh (doubles/rehearsal/host.ts), so a new machine has a new one.
BOOT_ID = ROOT / "run/fake-microk8s/boot_id"
PORT = int(os.environ.get("FAKE_MICROK8S_PORT", str(join.AGENT_PORT)))
API_PORT = int(os.environ.get("FAKE_MICROK8S_API_PORT", str(kubectl.API_PORT)))
# Tests only: the node's one address (its agent binds it, it is the source of what the node
# sends, kubelet's InternalIP) and its hostname, so that several nodes share one machine.
ADDRESS = os.environ.get("FAKE_MICROK8S_ADDRESS")
SELF = ADDRESS or "127.0.0.1"
DQLITE_PORT = dqlite.PORT
LOCK = threading.Lock()
# microk8s 1.28's core addons (microk8s-core-addons, addons.yaml), as status lists them.
ADDONS = [
    "cert-manager", "community", "dashboard", "dns", "gpu", "ha-cluster", "helm", "helm3",
    "host-access", "hostpath-storage", "ingress", "kube-ovn", "mayastor", "metallb",
    "metrics-server", "minio", "observability", "prometheus", "rbac", "registry", "storage",
]  # fmt: skip
# What `microk8s refresh-certs` prints as $SNAP_DATA: the first revision's directory.
SHOWN_SNAP_DATA = f"/var/snap/microk8s/{snapd.FIRST_REVISION}"
QUORUM_LOG = SNAP_DATA / "fake/quorum.log"
# Held while this node's copy of the database is read and replaced (the agent's threads, commands).
COPY_LOCK = SNAP_DATA / "fake/.cluster.lock"
# How long a write may keep finding another one committed first before the fake gives up.
COMMIT_SECONDS = 60
VOTER_REMOVALS = SNAP_DATA / "fake/voter-removals.log"
VOTER = dqlite.VOTER


def node() -> dict:
    defaults = {"installed": False, "running": False, "agent": None, "channel": None, "cluster_id": None}
    return {**defaults, "restart_until": 0, **read(NODE, {})}


def addresses() -> list[str]:
    """The node's IPv4 addresses (add_token.py's get_network_info lists them all)."""
    if ADDRESS:
        return [ADDRESS]
    output = subprocess.run(
        ["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True
    ).stdout
    return [line.split()[3].split("/")[0] for line in output.splitlines()]


def hostname() -> str:
    return os.environ.get("FAKE_MICROK8S_HOSTNAME") or socket.gethostname()


def boot_id() -> str:
    """This machine's boot id (BOOT_ID), made at its first reading after the machine started."""
    import uuid

    BOOT_ID.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError), open(BOOT_ID, "x") as new:
        new.write(str(uuid.uuid4()))
    return BOOT_ID.read_text().strip()


def node_ip() -> str:
    """kubelet's InternalIP: the address of the interface with the default route."""
    if ADDRESS:
        return ADDRESS
    route = subprocess.run(
        ["ip", "-4", "-o", "route", "show", "default"], capture_output=True, text=True
    ).stdout.split()
    device = route[route.index("dev") + 1] if "dev" in route else None
    output = subprocess.run(["ip", "-4", "-o", "addr", "show", *(["dev", device] if device else []), "scope", "global"],
                            capture_output=True, text=True).stdout  # fmt: skip
    return output.split()[3].split("/")[0] if output else "127.0.0.1"


def kubelite_started(state: dict) -> None:
    """kubelite starts, reading its API server's arguments: the address it advertises from now on."""
    args = APISERVER_ARGS.read_text() if APISERVER_ARGS.exists() else ""
    state["advertised"] = kube_objects.advertised_address(args, node_ip())


def start_own_cluster(state: dict) -> None:
    """
    A node's own cluster, written as its copy: dqlite bound to 127.0.0.1 until the first join
    (microk8s' default), this node its only voter. The install starts it (snap/hooks/install,
    then k8s-dqlite bootstraps), and so does leave (leave.py reinit_cluster). It is this node's
    copy only until a join replaces or drops it: a node that became a spare never falls back to it.
    """
    write(
        CLUSTER,
        {
            "id": state["cluster_id"],
            "index": 1,
            "members": [{"address": f"127.0.0.1:{DQLITE_PORT}", "role": "voter"}],
            "nodes": [{"name": hostname(), "address": node_ip(), "version": version(state)}],
            "addons": {name: "enabled" if name == "ha-cluster" else "disabled" for name in ADDONS},
        },
    )


# --- the agent ----------------------------------------------------------------------------------


def request(address: str, path: str, body: dict | None = None, timeout: float = 10) -> tuple[int, dict]:
    """A POST to the agent at ``address``, through http.client as join.py does."""
    import http.client

    source = (ADDRESS, 0) if ADDRESS else None
    connection = http.client.HTTPConnection(address, PORT, timeout=timeout, source_address=source)
    try:
        connection.request("POST", path, json.dumps(body or {}), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


def resolves(name: str, address: str) -> bool:
    try:
        return address in {info[4][0] for info in socket.getaddrinfo(name, None, socket.AF_INET)}
    except OSError:
        return False


def agent_handler() -> type:
    """
    The agent's request handler. http.server (and the http.client and email modules it imports)
    loads only in the agent's daemon: every other run of the fake, hundreds in a rehearsal, skips
    their import.
    """
    import http.server

    class Agent(http.server.BaseHTTPRequestHandler):
        def log_message(self, format, *args):
            with AGENT_LOG.open("a") as log:
                log.write(f"{self.address_string()} {format % args}\n")

        def reply(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if self.path == "/join":
                with LOCK:
                    code, answer = self.handle_path(self.path, body)
            else:
                code, answer = self.handle_path(self.path, body)
            self.reply(code, answer)

        def handle_path(self, path: str, body: dict) -> tuple[int, dict]:
            state = node()
            if path == "/health":
                # What the node's kubelet would tell its API server: up, which cluster, which version,
                # which boot of its machine.
                return 200, {
                    "running": state["running"],
                    "restarting": snapd.restarting(state),
                    "cluster": state["cluster_id"],
                    "version": version(state),
                    "boot_id": boot_id(),
                    # The address its API server advertises (its lease, for the kubernetes Endpoints).
                    "advertise": state.get("advertised"),
                }
            if path == "/certificate":
                # The server certificate the agent's TLS presents (join.py reads it with getpeercert).
                return 200, {"pem": SERVER_CRT.read_text() if SERVER_CRT.exists() else None}
            if not state["running"]:
                return 503, {"error": "microk8s is not running"}
            if path == "/join":
                return self.join(body)
            if path == "/cluster":
                copy = local_copy(state)
                return (200, copy) if copy else (404, {"error": "this node holds no copy of the database"})
            if path == "/update":
                # A write, to be ordered here ("ordered": this node leads) or replicated from the leader.
                if body.get("id") != state["cluster_id"]:
                    return 409, {"error": "another cluster"}
                if not receive(body, ordered=bool(body.get("ordered"))):
                    return 409, {"error": "a write was committed at this index first"}
                return 200, {}
            if path == "/record":
                append_quorum_log(str(body.get("line")))
                return 200, {}
            if path == "/quorum":
                found = quorum(state)
                if not found["quorum"]:
                    record_lost(found, "POST /quorum")
                return 200, {k: found[k] for k in ("quorum", "cluster", "voters", "reachable", "index")}
            return 404, {"error": f"no {path}"}

        def join(self, body: dict) -> tuple[int, dict]:
            """join.go, Join: the token first, then the hostname, then dqlite (join.py in microk8s_core)."""
            joiner = self.client_address[0]
            if not tokens.consume(TOKENS, str(body.get("token"))):
                return refusal(join.invalid_token())
            name = str(body.get("hostname"))
            if not resolves(name, joiner):
                return refusal(join.unresolved(name, joiner))
            # The agent's release is its node's: branch 1.28's join.go, or the current agent's.
            agent_minor = minor(node())
            spent = faults.spend(SNAP_DATA, "join_dqlite_error")
            if spent is not None:
                return refusal(join.dqlite_failed(spent, agent_minor))
            state = node()
            # GetDqliteCluster reads this node's cluster.yaml: the last configuration its dqlite
            # knew, which needs no quorum (a spare, holding no copy, knows the freshest reachable).
            known = local_copy(state) or quorum(state)["db"] or {"members": []}
            local = self.connection.getsockname()[0]
            # A lone member still on 127.0.0.1 is this node (the fake's tests join from 127.0.0.1).
            if any(host_of(m) == joiner for m in alone(known, local)["members"]):
                return refusal(join.already_known(joiner, agent_minor))
            copy = local_copy(state)
            if copy and [m["address"] for m in copy["members"]] == [f"127.0.0.1:{DQLITE_PORT}"]:
                # join.go (UpdateDqliteIP): the first join moves dqlite from 127.0.0.1 to the address
                # the joiner used; the node alone, its own majority, reconfigures itself.
                copy["members"][0]["address"] = f"{local}:{DQLITE_PORT}"
                copy["index"] += 1
                write(CLUSTER, copy)
            entry = {"name": name, "address": joiner, "version": body.get("version")}
            # The joiner's kubelet starts with this node's arguments (join.response): with
            # --cloud-provider=external it creates its Node with the uninitialized taint (cloud_controller.py).
            taints = cloud_controller.registration_taints(kubelet_args())
            if taints:
                entry["taints"] = taints
            if body.get("worker"):
                # join.py join_dqlite_worker_node starts its kubelet with the worker's --node-labels.
                entry["worker"] = True

            def register_node(db: dict) -> None:
                register(db, entry)

            command = f"agent of {local}: join from {joiner}"
            if body.get("worker"):
                if not commit(state, register_node, command + " (--worker)"):
                    return refusal(join.no_control_plane())
                return 200, {
                    "agent": local,
                    "cluster": state["cluster_id"],
                    "copy": None,
                    **join.response(SNAP_DATA, True),
                }

            def add_member(db: dict) -> None:
                # go-dqlite: a node joins as a spare (client.Add), then takes the role roles.go
                # Assume gives it at startup; the leader adjusts the others (dqlite.py).
                dqlite.join(db["members"], f"{joiner}:{DQLITE_PORT}", set(online_members(state, db)) | {joiner})
                register_node(db)

            # The agent answers at once; the joiner's dqlite then asks the leader to add it, which
            # needs a quorum: without one the joiner waits in vain (join.py update_dqlite).
            written = commit(state, add_member, command, joining=joiner)
            return 200, {
                "agent": local,
                "cluster": state["cluster_id"],
                "stalled": written is None,
                "copy": written if written and dqlite.holds_copy(written["members"], joiner) else None,
                **join.response(SNAP_DATA, False),
            }

    return Agent


def refusal(answer: tuple[int, str]) -> tuple[int, dict]:
    """One of the agent's refusals of a join (join.py in microk8s_core), as its HTTP answer."""
    status_code, error = answer
    return status_code, {"error": error}


def kubelet_args() -> str | None:
    return KUBELET_ARGS.read_text() if KUBELET_ARGS.exists() else None


def register(db: dict, entry: dict) -> None:
    """
    The joiner's kubelet registers its Kubernetes node through the API server. A Node is known by
    its name: a kubelet whose node exists already takes it over (kubernetes
    pkg/kubelet/kubelet_node_status.go tryRegisterWithAPIServer, on AlreadyExists), so a machine
    rebuilt under the same name is one node again, whatever address it had before (the dual-homed
    master's first one is its public address, the default route's); one at the joiner's address
    goes too. The Node object it takes over keeps its spec.providerID, which the API server never
    changes once set (kubernetes pkg/apis/core/validation ValidateNodeUpdate), so a rebuilt
    machine's node names the server it replaced.
    """
    same_name = next((n for n in db["nodes"] if n["name"] == entry["name"]), None)
    if same_name is not None:
        # Taken over, not created: no taint of initialNode's.
        entry = {k: v for k, v in entry.items() if k != "taints"}
    if same_name is not None and same_name.get("providerID"):
        entry = {**entry, "providerID": same_name["providerID"]}
    db["nodes"] = [n for n in db["nodes"] if entry["address"] != n["address"] and entry["name"] != n["name"]] + [entry]


def serve() -> None:
    import http.server

    threading.Thread(target=serve_api, daemon=True).start()
    server = http.server.ThreadingHTTPServer((ADDRESS or "0.0.0.0", PORT), agent_handler())
    server.serve_forever()


def serve_api() -> None:
    """
    kube-apiserver's TLS on 16443 (microk8s-resources/default-args/kube-apiserver:
    --secure-port=16443, --tls-cert-file=${SNAP_DATA}/certs/server.crt and its key), on a
    control-plane node while microk8s runs and is not restarting: the handshake only, with the
    certificate as it is at that moment (refresh-certs restarts kubelite, which reads it anew).
    Started with the agent, in the same process.
    """
    try:
        listener = socket.create_server((ADDRESS or "0.0.0.0", API_PORT))
    except OSError as error:
        # Only where tests run several fakes on one address (the rehearsal's hosts each have theirs).
        print(f"fake microk8s: no API server on port {API_PORT}: {error}", file=sys.stderr)
        return
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=api_handshake, args=(connection,), daemon=True).start()


def api_handshake(connection: socket.socket) -> None:
    with connection:
        state = node()
        if is_worker() or not state["running"] or snapd.restarting(state):
            return
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(SERVER_CRT, SERVER_KEY)
        connection.settimeout(10)
        with contextlib.suppress(OSError), context.wrap_socket(connection, server_side=True) as tls:
            # The client's request, or its close, ends the exchange: no API stands behind it.
            tls.recv(1)


def start_agent() -> None:
    """snap.microk8s.daemon-cluster-agent: started detached, so the caller's output closes."""
    if agent_up(SELF):
        return
    AGENT_LOG.parent.mkdir(parents=True, exist_ok=True)
    with AGENT_LOG.open("a") as log:
        agent = subprocess.Popen([sys.executable, os.path.realpath(__file__), "agent"], stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=log, start_new_session=True)  # fmt: skip
    # systemd fails a unit that has not started within DefaultTimeoutStartSec (90 s), or whose
    # process exits (the port taken, say): the log says why, as journalctl would.
    deadline = time.monotonic() + 90
    while not agent_up(SELF):
        if agent.poll() is not None or time.monotonic() > deadline:
            agent.kill()
            tail = "".join(AGENT_LOG.read_text().splitlines(keepends=True)[-10:])
            raise SystemExit(f"fake microk8s: the cluster agent did not start\n{tail}")
        time.sleep(0.1)


def agent_up(address: str) -> bool:
    try:
        return request(address, "/health", timeout=1)[0] == 200
    except OSError:
        return False


# --- the replicated database (dqlite) -------------------------------------------------------------


host_of = dqlite.host_of


def alone(db: dict | None, host: str) -> dict | None:
    """A node's own cluster, dqlite still on 127.0.0.1 (microk8s' default): the member is ``host``."""
    if db and [m["address"] for m in db["members"]] == [f"127.0.0.1:{DQLITE_PORT}"]:
        db = json.loads(json.dumps(db))
        db["members"][0]["address"] = f"{host}:{DQLITE_PORT}"
    return db


def own_hosts() -> set[str]:
    return set(addresses()) | {SELF}


def local_copy(state: dict) -> dict | None:
    """This node's copy (a voter's or stand-by's), None on a spare or a worker (go-dqlite client NodeRole)."""
    return read(CLUSTER, None) if state["installed"] else None


def ask(address: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    """Another node's agent; (0, {}) when it does not answer."""
    try:
        return request(address, path, body, timeout=3)
    except (OSError, ValueError):
        return 0, {}


def probe(state: dict, host: str) -> tuple[bool, dict | None]:
    """Whether ``host``'s dqlite is up in this cluster, and its copy (None when it keeps none)."""
    if host in own_hosts():
        current = node()
        up = current["running"] and current["cluster_id"] == state["cluster_id"]
        return up, local_copy(current) if up else None
    code, health = ask(host, "/health")
    if code != 200 or not health.get("running") or health.get("cluster") != state["cluster_id"]:
        return False, None
    code, copy = ask(host, "/cluster")
    return True, copy if code == 200 and copy.get("id") == state["cluster_id"] else None


def quorum(state: dict) -> dict:
    """
    The Raft rule dqlite follows (canonical/raft, which dqlite embeds): the leader needs a
    majority of the voters of the current configuration, and reads go through the leader too
    (go-dqlite's driver finds the leader and queries it), so without a majority nothing is read
    or written. The configuration is the freshest copy (highest index) among the nodes that answer.
    """
    start = alone(local_copy(state), SELF)
    hosts = {host_of(m) for m in (start or {}).get("members", [])} | set(state.get("peers") or [])
    if start and not hosts & own_hosts():
        # A copy that does not list this node (a stale one): asked for it all the same, as itself.
        hosts.add(SELF)
    if state["agent"]:
        hosts.add(state["agent"])
    seen: dict[str, tuple[bool, dict | None]] = {}
    source, db, view = None, None, None
    for _ in range(2):
        for host in sorted(hosts - set(seen)):
            seen[host] = probe(state, host)
        copies = [(host, copy) for host, (_, copy) in seen.items() if copy]
        if copies:
            source, db = max(copies, key=lambda pair: pair[1].get("index", 0))
            view = alone(db, source)
        hosts |= {host_of(m) for m in (view or {}).get("members", [])}
    voters = [host_of(m) for m in (view or {}).get("members", []) if m["role"] == VOTER]
    answering = [v for v in voters if seen.get(v, (False, None))[1]]
    return {
        "quorum": bool(voters) and len(answering) * 2 > len(voters),
        "cluster": state["cluster_id"],
        "voters": voters,
        "reachable": answering,
        "index": (db or {}).get("index", 0),
        "db": db,
        "source": source,
        "online": [host for host, (up, _) in seen.items() if up],
        "copies": [host for host, (_, copy) in seen.items() if copy],
    }


def online_members(state: dict, db: dict) -> list[str]:
    return [host_of(m) for m in db["members"] if probe(state, host_of(m))[0]]


def append_quorum_log(line: str) -> None:
    (SNAP_DATA / "fake").mkdir(parents=True, exist_ok=True)
    with QUORUM_LOG.open("a") as log:
        log.write(line.rstrip("\n") + "\n")


def record_lost(found: dict, command: str) -> None:
    """fake/quorum.log on every surviving node of the cluster: when, who found it, how many voters answered."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = (
        f"{stamp} quorum lost: {len(found['reachable'])}/{len(found['voters'])} voters reachable "
        f"({' '.join(found['voters'])}); on {SELF}: {command}"
    )
    append_quorum_log(line)
    for host in found["online"]:
        if host not in own_hosts():
            ask(host, "/record", {"line": line})


def command_line() -> str:
    """The command being run, as typed: `microk8s ...` or `snap ...`."""
    return " ".join(
        [os.path.basename(sys.argv[0]).removesuffix(".py").replace("fake_microk8s", "microk8s"), *sys.argv[1:]]
    )


# The database as this command read it (read_db), against which update() finds what it changed.
AS_READ: dict = {}


def read_db(state: dict, command: str | None = None) -> dict | None:
    """The cluster database through its leader, or None (and the loss recorded) without a quorum."""
    found = quorum(state)
    if not found["quorum"]:
        record_lost(found, command or command_line())
        return None
    peers = sorted({host_of(m) for m in found["db"]["members"]} - own_hosts())
    if peers != state.get("peers") and NODE.exists():
        current = node()
        current["peers"] = peers
        write(NODE, current)
    AS_READ.clear()
    AS_READ.update(json.loads(json.dumps(found["db"])))
    return found["db"]


def receive(body: dict, ordered: bool = False) -> bool:
    """
    A write on this node: its copy replaced, or dropped ("drop": a demotion to spare, which keeps
    no log), never by an older one. ``ordered``: this node is the leader, which puts each write at
    the next index of its log (Raft), so a write read at an index another write took since is
    refused (False), and its writer reads the database again.
    """
    COPY_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with COPY_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        current = read(CLUSTER, {}).get("index") or 0
        if ordered and body["index"] <= current:
            return False
        if body.get("drop"):
            CLUSTER.unlink(missing_ok=True)
            state = node()
            write(NODE, {**state, "peers": body.get("peers") or state.get("peers") or []})
        elif body["index"] >= current:
            write(CLUSTER, body)
    return True


def commit(state: dict, change, command: str | None = None, joining: str | None = None) -> dict | None:
    """
    One write through the leader: accepted only while a majority of the voters answers (Raft),
    then sent to every reachable voter and stand-by (their copies, one index higher); roles are
    adjusted as go-dqlite's leader would. Returns the database written, or None (and the loss
    recorded) without a quorum. ``joining`` is the address of a node being added: it takes its
    copy from the join's answer.

    The leader orders the writes: the first voter that answers (in the order the members are
    listed, as every node reads it) takes a write only at the index after its own, so of two
    writes read at the same index the second is read and made again (``change`` applied to the
    database as it is then), as the API server retries a conflicting update.
    """
    deadline = time.monotonic() + COMMIT_SECONDS
    while True:
        found = quorum(state)
        if not found["quorum"]:
            record_lost(found, command or command_line())
            return None
        # The voter that orders this write: the leader of the configuration read, its first voter
        # that answered with its copy (a quorum has one).
        orderer = found["reachable"][0]
        db = json.loads(json.dumps(found["db"]))
        change(db)
        online = set(found["online"]) | ({joining} if joining else set())
        dqlite.adjust_roles(db["members"], online, dqlite.leader(db["members"], online))
        db["index"] = found["index"] + 1
        view = alone(db, found["source"])
        if deliver(db, view, orderer, ordered=True):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"fake microk8s: no write committed in {COMMIT_SECONDS} s, each found another first")
        time.sleep(0.05)
    for host in sorted(set(found["online"]) - {joining, orderer}):
        deliver(db, view, host)
    return db


def deliver(db: dict, view: dict, host: str, ordered: bool = False) -> bool:
    """
    The write to ``host``: its copy, or the copy dropped when it holds none now (a spare). This
    node once, whichever of its addresses (127.0.0.1, a private and a public one) the members
    list: it keeps the copy while any of them is a voter or stand-by.
    """
    own = own_hosts()
    hosts = own if host in own else {host}
    if any(dqlite.holds_copy(view["members"], each) for each in hosts):
        body = db
    else:
        peers = sorted({host_of(m) for m in view["members"]} - hosts)
        body = {"id": db["id"], "index": db["index"], "drop": True, "peers": peers}
    if host in own:
        return receive(body, ordered)
    return ask(host, "/update", {**body, **({"ordered": True} if ordered else {})})[0] == 200


def rebase(db: dict, before: dict, after: dict) -> None:
    """
    What a command changed in the database it read (``before`` to ``after``), written into ``db``,
    the database as it is now: the API server writes each object a command changes, nothing it
    only read (kubectl label and cordon send a PATCH of one Node, kubectl pkg/cmd/label and
    pkg/drain/cordon.go; remove_node.py runs `kubectl delete no <node>`), and dqlite's members and
    microk8s' addons are changed one by one the same way.
    """
    for key, field in (("nodes", "name"), ("members", "address")):
        old = {entry[field]: entry for entry in before.get(key, [])}
        new = {entry[field]: entry for entry in after.get(key, [])}
        changed = {name: entry for name, entry in new.items() if old.get(name) != entry}
        kept = [changed.pop(e[field], e) for e in db.get(key, []) if e[field] in new or e[field] not in old]
        db[key] = kept + list(changed.values())
    for key in ("addons", "objects"):
        old, new = before.get(key, {}), after.get(key, {})
        target = db.setdefault(key, {})
        for name in old.keys() - new.keys():
            target.pop(name, None)
        target.update({name: value for name, value in new.items() if old.get(name) != value})


def update(state: dict, data: dict) -> bool:
    """Writes what a command changed in the database it read (read_db) into the database as it is now."""

    def apply(db: dict) -> None:
        rebase(db, AS_READ, data)

    return commit(state, apply) is not None


# --- the CLI ------------------------------------------------------------------------------------


def is_worker() -> bool:
    return WORKER_LOCK.exists()


def status_command(state: dict, args: list[str]) -> int:
    """status.py (status.py in microk8s_core), its quorum read through the database's leader."""
    if "--wait-ready" in args:
        timeout = int(args[args.index("--timeout") + 1]) if "--timeout" in args else 0
        deadline = time.time() + timeout
        # wait_for_ready: until is_cluster_ready, which needs the API server and its datastore.
        while not node()["running"] or snapd.restarting(node()) or not quorum(node())["quorum"]:
            if timeout and time.time() > deadline:
                print(status.NOT_RUNNING)
                return 1
            time.sleep(1)
        return 0
    if is_worker():
        print(status.WORKER)
        return 0
    if not state["running"]:
        print(status.STOPPED)
        return 0
    data = read_db(state)
    # is_cluster_ready: kubectl get all / get nodes, which fail without the datastore.
    ready = not snapd.restarting(state) and data is not None
    # is_ha_enabled's lock file is local: the last copy this node saw tells it.
    known = data or local_copy(state) or {"addons": {"ha-cluster": "enabled"}}
    ha_enabled = known["addons"].get("ha-cluster") == "enabled"
    members = []
    if ha_enabled:
        # get_dqlite_info: [] when its dqlite query (answered by the leader) failed its 10 tries:
        # no quorum, the fault, or a node whose own address the leader does not list.
        members = (data or {}).get("members", [])
        if not any(m["address"] == f"127.0.0.1:{DQLITE_PORT}" or host_of(m) in own_hosts() for m in members):
            members = []
        if faults.spend(SNAP_DATA, "status_dqlite_empty") is not None:
            members = []
    addons = status.enabled_first(data["addons"]) if ready else []
    status.print_yaml(ready, ha_enabled, members, addons, version(state), repository="core")
    # Restarting after a refresh, or no quorum: status.py exits 1.
    return 0 if ready else 1


def addon(state: dict, command: str, args: list[str]) -> int:
    if is_worker():
        print(status.WORKER_LOCKED)
        return 1
    data = read_db(state)
    if data is None:
        # enable.py's kubectl calls get the API server's 504.
        return kubectl.addon_timed_out()
    for spec in args:
        name = spec.split(":", 1)[0]
        if name not in data["addons"]:
            print(f"Addon {name} was not found in any repository", file=sys.stderr)
            return 1
        data["addons"][name] = "enabled" if command == "enable" else "disabled"
        if name == "hostpath-storage" and command == "enable":
            # The addon applies its default StorageClass (kube_objects.hostpath_storage_class).
            storage_class = kube_objects.hostpath_storage_class()
            data.setdefault("objects", {})[kube_objects.key(storage_class)] = storage_class
        print(f"Addon {name} is {'enabled' if command == 'enable' else 'disabled'}")
    if not update(state, data):
        return kubectl.addon_timed_out()
    return 0


def add_node(state: dict, args: list[str]) -> int:
    """add_token.py (tokens.py in microk8s_core): one URL per address of the node."""
    token = tokens.issue(TOKENS, args)
    check = server_cert.check(SERVER_CRT.read_text())
    urls = [f"{address}:{PORT}/{token}/{check}" for address in addresses()]
    if "--format" in args and args[args.index("--format") + 1] == "json":
        print(json.dumps({"token": f"{token}/{check}", "urls": urls}))
    else:
        print("From the node you wish to join to this cluster, run the following:")
        print(f"microk8s join {urls[0]}")
    return 0


def peer_certificate(address: str) -> str | None:
    """The agent's /certificate, standing in for the certificate the TLS handshake presents."""
    status_code, answer = request(address, "/certificate", timeout=30)
    return answer.get("pem") if status_code == 200 else None


def join_command(state: dict, args: list[str]) -> int:
    """join.py (join.py in microk8s_core): the join posted to the agent at the connection's address."""
    contacted = join.contact(args[0], minor(state))
    if contacted is None:
        return 1
    address, token, fingerprint = contacted
    worker = "--worker" in args
    if fingerprint is not None and "--skip-verify" not in args:
        code = join.verify(address, fingerprint, lambda: peer_certificate(address))
        if code:
            return code
    # join.py get_connection_info: only HTTPException is caught; a refused connection is a traceback.
    body = {"token": token, "hostname": hostname(), "worker": worker, "version": version(state)}
    status_code, answer = request(address, "/join", body, timeout=30)
    if status_code != 200:
        return join.refused(status_code, answer.get("error"))
    state.update(agent=address, cluster_id=answer.get("cluster"), peers=[address])
    # A join resets the node to the cluster's: its own database and addons are gone; a voter
    # or stand-by gets the cluster's copy (the leader's replication), a spare or worker none.
    CLUSTER.unlink(missing_ok=True)
    if answer.get("copy"):
        write(CLUSTER, answer["copy"])
    if answer.get("stalled"):
        # Not a member: nothing of the control plane's to store.
        join.store_kubelet_args(SNAP_DATA, answer)
    else:
        join.store(SNAP_DATA, answer, worker, addresses())
    join.joined(minor(state), worker, stalled=bool(answer.get("stalled")))
    write(NODE, state)
    return 0


def leave_command(state: dict) -> int:
    """leave.py (leave.py in microk8s_core), through the database's leader."""
    if is_worker():
        leave.reset_worker(SNAP_DATA)
    else:
        data = read_db(state)
        if data is None:
            return leave.no_leader()
        # 127.0.0.1 is this node only while dqlite was never moved off it (alone); in a formed
        # cluster it is another member's address (the tests' nodes share the loopback network).
        members = alone(data, SELF)["members"]
        code = leave.only_copy(members, own_hosts())
        if code:
            return code
        data["members"] = [m for m in members if host_of(m) not in own_hosts()]
        update(state, data)
    # reinit_cluster: a cluster of its own.
    state.update(agent=None, cluster_id=secrets.token_hex(8), peers=[])
    start_own_cluster(state)
    write(NODE, state)
    return leave.left(SNAP_DATA)


def remove_node_command(state: dict, args: list[str]) -> int:
    """remove_node.py (remove_node.py in microk8s_core), through the database's leader."""
    if is_worker():
        print(status.WORKER_LOCKED)
        return 1
    target, force = args[0], "--force" in args
    data = read_db(state)
    if data is None:
        return remove_node.no_quorum(target, force)
    _, address = node_objects.removal_target(data["nodes"], target)
    member = f"{address}:{DQLITE_PORT}"
    voter = any(m["address"] == member and m["role"] == VOTER for m in data["members"])
    # remove_node.py refuses nothing here (--force drops any member), so the fake does not
    # either: it records the removal of a voter still Ready, which a test asserts never happens.
    healthy_voter = force and voter and node_ready(state, health(address))
    answer = remove_node.remove(data, target, force)
    if answer[3] and not update(state, data):
        return leave.no_leader()
    if answer[3] and healthy_voter:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with VOTER_REMOVALS.open("a") as log:
            log.write(f"{stamp} a Ready voter removed: {target} ({member}); on {SELF}: {command_line()}\n")
    return emit(answer)


def health(address: str) -> dict:
    try:
        return request(address, "/health", timeout=2)[1]
    except OSError:
        return {}


def node_ready(state: dict, answer: dict) -> bool:
    """A node's Ready condition from its agent's /health: running, not restarting, in this cluster."""
    return (
        answer.get("running") is True
        and not answer.get("restarting")
        and answer.get("cluster") is not None
        and answer.get("cluster") == state["cluster_id"]
    )


def ready_status(state: dict, answer: dict) -> str:
    """The Ready condition's status from the node's agent's /health ``answer`` (its kubelet posts only while Ready)."""
    return "True" if node_ready(state, answer) else "Unknown"


def node_item(state: dict, entry: dict, answer: dict) -> dict:
    """One Node as the API server returns it (node_objects.item), Ready by its agent's ``answer`` (/health)."""
    status = ready_status(state, answer)
    posting = status != "Unknown"
    # The kubelet posts its version and boot id with its status; the last ones posted stay
    # otherwise (observe_ready keeps the boot id).
    kubelet_version = answer["version"] if posting else entry.get("version") or DEFAULT_VERSION
    boot = answer.get("boot_id", "") if posting else entry.get("boot_id", "")
    return node_objects.item(entry, status, kubelet_version, boot)


def written(state: dict, data: dict, answer: tuple[int, str, str, bool], args: list[str], record: bool = False) -> int:
    """
    Prints a kubectl answer; when it changed the database, writes that through the database's
    leader first (``args``: what the 504 names when it cannot), and with ``record`` (a change of
    objects other than Nodes) this node's record, fake/objects.json.
    """
    if answer[3]:
        if not update(state, data):
            return kubectl.unavailable(args)
        if record:
            kube_objects.record(SNAP_DATA, data["objects"])
    return emit(answer)


def kubectl_schedule(state: dict, data: dict, verb: str, args: list[str]) -> int:
    """kubectl cordon / uncordon / drain <node> (kubectl.py in microk8s_core)."""
    found, answer = kubectl.schedule(data["nodes"], verb, args)
    code = written(state, data, answer, [verb, found["name"] if found else ""])
    if found is None or verb != "drain" or code:
        return code
    # A kubelet that still posts deletes the evicted pods; none confirms once it stopped.
    posting = ready_status(state, health(found["address"])) != "Unknown"
    drained = kubectl.drain(data.setdefault("objects", {}), found["name"], args, posting)
    return written(state, data, drained, [verb, found["name"]], record=True)


def kubectl_command(state: dict, args: list[str]) -> int:
    """microk8s-kubectl.wrapper: a worker's message (exit 0), exit_if_stopped, then kubectl."""
    if is_worker():
        print(kubectl.WORKER)
        return 0
    if not state["running"]:
        print(status.STOPPED, file=sys.stderr)
        return 1
    if snapd.restarting(state):
        print(kubectl.API_DOWN, file=sys.stderr)
        return 1
    verbs = (["cordon"], ["uncordon"], ["drain"], ["label"], ["taint"], ["annotate"], ["apply"], ["get"], ["patch"])
    if args[:1] not in verbs:
        return kubectl.not_reproduced(args)
    # The manifest kubectl apply reads from stdin, read before the database (a 504 would not read it).
    manifest = sys.stdin.read() if args[:1] == ["apply"] else None
    data = read_db(state)
    if data is None:
        return kubectl.unavailable(args)
    # The cloud controller manager's work since the last command (cloud_controller.py), against
    # the servers the rehearsal's cloud lists on every host.
    listing = cloud_controller.servers(NOVA_SERVERS)
    ready = lambda entry: node_ready(state, health(entry["address"]))  # noqa: E731
    if cloud_controller.reconcile(data["nodes"], data.get("objects", {}), listing, ready):
        if not update(state, data):
            return kubectl.unavailable(args)
        AS_READ.clear()
        AS_READ.update(json.loads(json.dumps(data)))
    nodes = kubectl.node_word(args[1:])
    if args[:1] == ["get"] and nodes:
        return get_nodes(state, data, args)
    if args[:1] in (["label"], ["taint"]) or (args[:1] in (["annotate"], ["patch"]) and nodes):
        name, answer = kubectl.edit(data["nodes"], args[0], args[1:])
        return written(state, data, answer, [args[0], name or ""])
    if args[:1] in (["apply"], ["get"], ["annotate"]):
        return kubectl_objects(state, data, args[0], args[1:], manifest)
    if args[:1] == ["patch"]:
        return kubectl.not_reproduced(args)
    return kubectl_schedule(state, data, args[0], args[1:])


def get_nodes(state: dict, data: dict, args: list[str]) -> int:
    """
    kubectl get nodes -o json, or get node NAME: the Nodes as the API server holds them, each
    Ready condition's change (node_objects.observe_ready) written through the leader first.
    """
    names = kubectl.operands(args)[2:3]
    answers = {
        entry["name"]: health(entry["address"]) for entry in data["nodes"] if not names or entry["name"] in names
    }
    read = [entry for entry in data["nodes"] if entry["name"] in answers]
    observed = [
        node_objects.observe_ready(
            entry,
            ready_status(state, answers[entry["name"]]),
            answers[entry["name"]].get("boot_id"),
        )
        for entry in read
    ]
    if any(observed):
        if not update(state, data):
            return kubectl.unavailable(args)
    item = lambda entry: node_item(state, entry, answers[entry["name"]])  # noqa: E731
    if names:
        return kubectl.get_node(data["nodes"], names[0], item)
    return kubectl.get_nodes(data["nodes"], item)


def kubectl_objects(state: dict, data: dict, verb: str, args: list[str], manifest: str | None) -> int:
    """
    kubectl apply -f - (``manifest``, from stdin), get and annotate of objects other than Nodes
    (kubectl.objects), kept in the cluster database under "objects" and written through its
    leader; after every change this node writes the record, fake/objects.json.
    """
    objects = data.setdefault("objects", {})
    names = kubectl.operands(args)
    if verb == "get" and names and kube_objects.kind_of(names[0]) == "Endpoints":
        # default/kubernetes: the API servers' endpoint reconciler's, which no client writes.
        endpoints = kube_objects.kubernetes_endpoints(api_servers(state, data))
        objects = {**objects, kube_objects.key(endpoints): endpoints}
    answer = kubectl.objects(objects, verb, args, lambda: manifest or "")
    return written(state, data, answer, [verb, ""], record=True)


def api_servers(state: dict, data: dict) -> list[str]:
    """
    The addresses the cluster's API servers advertise: each control-plane node's whose kubelite
    runs in this cluster (its lease renewed; lease.go drops an expired one), from its agent.
    """
    found = []
    for entry in data["nodes"]:
        if entry.get("worker"):
            continue
        answer = health(entry["address"])
        if node_ready(state, answer) and answer.get("advertise"):
            found.append(answer["advertise"])
    return found


def unknown_channel(channel: str | None) -> bool:
    """Only 1.NN/<risk> (and latest/..., taken as 1.28) are reproduced; anything else is refused."""
    if channel is None or release(channel) is not None or channel.startswith("latest/"):
        return False
    print(f"fake snap: channel {channel} is not reproduced (only 1.NN/<risk> and latest/...)", file=sys.stderr)
    return True


def snap(args: list[str]) -> int:
    """The snap command, for microk8s only (snapd.py in microk8s_core)."""
    state = node()
    channel = snapd.channel(args)
    if args[:2] == ["list", "microk8s"]:
        if not state["installed"]:
            print("error: no matching snaps installed", file=sys.stderr)
            return 1
        print(snapd.listing(state, version(state), 15))
        return 0
    if snapd.is_hold_command(args):
        if not state["installed"]:
            print('error: snap "microk8s" is not installed', file=sys.stderr)
            return 1
        answer = snapd.hold(state, args)
        write(NODE, state)
        return emit(answer)
    if args[:2] == ["install", "microk8s"]:
        if state["installed"]:
            print(snapd.ALREADY_INSTALLED)
            return 0
        if unknown_channel(channel):
            return 2
        # The launch configuration is read once, at install (microk8s' snap/hooks/install).
        launch = SNAP_COMMON / ".microk8s.yaml"
        state.update(
            installed=True,
            running=True,
            channel=channel or "latest/stable",
            launch=launch.read_text() if launch.exists() else None,
            cluster_id=secrets.token_hex(8),
        )
        # The install hook copies default-args to $SNAP_DATA/args.
        KUBELET_ARGS.parent.mkdir(parents=True, exist_ok=True)
        KUBELET_ARGS.write_text(layout.DEFAULT_KUBELET_ARGS)
        APISERVER_ARGS.write_text(kube_objects.DEFAULT_APISERVER_ARGS)
        kubelite_started(state)
        CSR_TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
        CSR_TEMPLATE.write_text(server_cert.CSR_TEMPLATE)
        # produce_certs: a CA of this install's own, written only when there is none; csr.conf
        # rendered from the template, and server.crt from it.
        server_cert.produce_ca(SNAP_DATA)
        server_cert.refresh_csr_conf(SNAP_DATA, addresses())
        server_cert.gen_server_cert(SNAP_DATA, addresses())
        start_own_cluster(state)
        write(NODE, state)
        start_agent()
        print(snapd.installed(state["channel"], version(state)))
        return 0
    if args[:1] == ["restart"]:
        # kubelite starts again, reading its arguments files.
        answer = snapd.restart_services(state, args[1:], faults.restart_seconds(SNAP_DATA))
        if answer[0] == 0:
            kubelite_started(state)
            write(NODE, state)
        return emit(answer)
    if args[:1] == ["watch"]:
        return emit(snapd.watch(state, args))
    no_wait, args = snapd.no_wait(args)
    if args[:2] == ["refresh", "microk8s"]:
        if not state["installed"]:
            print('error: snap "microk8s" is not installed', file=sys.stderr)
            return 1
        if channel is None or channel == state["channel"]:
            print(snapd.NO_UPDATES)
            return 0
        if unknown_channel(channel):
            return 2
        change = snapd.start_change(state, "refresh-snap", snapd.refresh_summary(channel))
        # The new revision's services start over.
        state["channel"] = channel
        snapd.restart(state, faults.restart_seconds(SNAP_DATA))
        kubelite_started(state)
        write(NODE, state)
        data = read_db(state) if state["running"] else None
        if data is not None:
            # The kubelet's next status post carries the new version (when the API server can take it).
            for entry in data["nodes"]:
                if entry["address"] in addresses() or entry["name"] == hostname():
                    entry["version"] = version(state)
            update(state, data)
        print(change if no_wait else snapd.refreshed(channel, version(state)))
        return 0
    print(f"fake snap: unsupported {args}", file=sys.stderr)
    return 2


def quorum_query(state: dict) -> int:
    """
    Not a microk8s command: the test's question "does this node's cluster have a quorum now?"
    (the agent answers the same at POST /quorum). Prints {"quorum", "cluster", "voters",
    "reachable", "index"} as JSON; exit 0 with a quorum, 1 without (the loss recorded in
    fake/quorum.log like any other).
    """
    found = quorum(state)
    print(json.dumps({k: found[k] for k in ("quorum", "cluster", "voters", "reachable", "index")}))
    if not found["quorum"]:
        record_lost(found, command_line())
        return 1
    return 0


def client_config() -> int:
    """microk8s config: the client config, for the default interface's address (see the module docstring)."""
    if WORKER_LOCK.exists():
        print(
            "This MicroK8s deployment is acting as a node in a cluster. Please use the microk8s config on the master."
        )
        return 0
    # client.config.template with the install hook's substitutions (CADATA, NAME, AUTHTYPE).
    ca_data = base64.b64encode(CA_CRT.read_bytes()).decode()
    print(
        "apiVersion: v1\n"
        "clusters:\n"
        "- cluster:\n"
        f"    certificate-authority-data: {ca_data}\n"
        f"    server: https://{node_ip()}:16443\n"
        "  name: microk8s-cluster\n"
        "contexts:\n"
        "- context:\n"
        "    cluster: microk8s-cluster\n"
        "    user: admin\n"
        "  name: microk8s\n"
        "current-context: microk8s\n"
        "kind: Config\n"
        "preferences: {}\n"
        "users:\n"
        "- name: admin\n"
        "  user:\n"
        "    token: fake-admin-token\n"
    )
    return 0


def main(argv: list[str]) -> int:
    program = os.path.basename(argv[0])
    args = argv[1:]
    if program == "snap":
        return snap(args)
    if args[:1] == ["agent"]:
        serve()
        return 0
    if args[:1] == ["microk8s-health"]:
        # LSB status: 0 running, 3 not running (also while the services restart after a refresh).
        return 0 if node()["running"] and not snapd.restarting(node()) and agent_up(SELF) else 3
    state = node()
    if not state["installed"]:
        print("microk8s: command not found", file=sys.stderr)
        return 127
    command, rest = (args[0], args[1:]) if args else ("", [])
    if command == "status":
        return status_command(state, rest)
    if command in ("start", "stop"):
        state["running"] = command == "start"
        if state["running"]:
            kubelite_started(state)
        write(NODE, state)
        if command == "start":
            start_agent()
        return 0
    if command == "refresh-certs":
        return server_cert.refresh_certs(rest, SNAP_DATA, addresses(), SHOWN_SNAP_DATA)
    if command == "fake-quorum":
        return quorum_query(state)
    if command == "fake-auto-refresh":
        # Not a microk8s command: snapd's auto-refresh of the snap, unless held (snapd.py).
        if snapd.auto_refresh(state, faults.restart_seconds(SNAP_DATA)):
            write(NODE, state)
        return 0
    if command == "kubectl":
        return kubectl_command(state, rest)
    if command == "config":
        return client_config()
    if not state["running"]:
        print(status.STOPPED, file=sys.stderr)
        return 1
    handlers = {
        "enable": lambda: addon(state, "enable", rest),
        "disable": lambda: addon(state, "disable", rest),
        "add-node": lambda: add_node(state, rest),
        "join": lambda: join_command(state, rest),
        "leave": lambda: leave_command(state),
        "remove-node": lambda: remove_node_command(state, rest),
    }
    if command not in handlers:
        print(f"fake microk8s: unsupported {args}", file=sys.stderr)
        return 2
    return handlers[command]()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
