#!/usr/bin/env python3
"""
A fake ``microk8s`` CLI for the tests that run the real Salt loader. Each fake node keeps its
$SNAP_DATA in $FAKE_MICROK8S_DIR, with the files microk8s itself keeps there
(credentials/cluster-tokens.txt, var/lock/clustered.lock, certs/csr.conf.template, certs/ca.crt,
certs/server.crt) plus a state.json for what a real node keeps in its services (the id of the
cluster it belongs to). Nodes find each other by address through $FAKE_MICROK8S_CLUSTER, a
directory of links named after each node's address: nothing goes over a network. Each
cluster's database (its dqlite members and Kubernetes nodes) is $FAKE_MICROK8S_CLUSTER/.dqlite/
<cluster id>.json, which stands in for dqlite's copies on every voter and stand-by: it outlives
any one node, so a rebuilt master (a fresh $SNAP_DATA at its address) finds the cluster the
voters kept, but only a majority of the voters can read or write it.

dqlite's roles, who keeps a copy, the majority rule and leave's refusal are microk8s_core/dqlite.py's
(one model for both fakes; go-dqlite app/roles.go, leave.py): a control-plane
joiner is a spare that takes its startup role, and every write adjusts the roles, so 2
control-plane nodes are a voter and a spare, 3 are 3 voters, a fourth a stand-by. A member
answers while its microk8s runs in the database's cluster (a rebuilt machine runs one of its
own); restarting after a refresh, it still answers, as in the rehearsal's fake. Without a
majority of the voters answering: status lists no member and exits 1 (`--wait-ready` waits),
kubectl, enable and disable get the API server's 504 (`Error from server (Timeout): ...`, exit
1), a worker's join gets HTTP 500 "failed to retrieve list of control plane nodes: ...", a
control-plane join waits in vain and exits 0, not a member, and leave and remove-node end in a
CalledProcessError traceback (remove-node first prints "Node <n> does not exist in
Kubernetes."); a stopped node's kubectl is refused (the API server is down).

What it reproduces, and where from (see __tests__/l4-salt/fixtures/microk8s/README.md for the output shapes):
- add-node appends ``<token>`` (single-use) or ``<token>|<expiry>`` (add_token.py);
- join checks, in the cluster agent's order (microk8s-cluster-agent, pkg/api/v2/join.go), the
  token (consumed at once when single-use, *before* the other checks), the joiner's hostname as
  the master resolves it ($FAKE_MICROK8S_DIR/etc-hosts stands in for the master's /etc/hosts when
  present), and whether dqlite already knows the joiner's address; errors are printed the way
  join.py relays them, with exit code 6; an unreachable master ends in a ConnectionRefusedError;
- a worker gets var/lock/clustered.lock, after which status prints only a message (exit 0);
- the cluster CA (certs/ca.crt, certs/ca.key): made at install, unique to that install
  (snap/hooks/install calls produce_certs, microk8s-resources/actions/common/utils.sh, which
  writes ca.crt only when missing); the agent's join response carries the CA it reads from its
  own node (microk8s-cluster-agent pkg/api/v2/join.go JoinResponse ``ca``, Snap.ReadCA), and
  ``ca_key`` for a control-plane joiner only; join.py join_dqlite_master_node stores both as
  certs/ca.crt and ca.key (store_cert, keeping a .backup), after which the apiservice-kicker's
  ensure_server_ca issues a new server.crt from that CA; join_dqlite_worker_node stores the CA
  as certs/ca.remote.crt (store_remote_ca) and keeps its own ca.crt; leave keeps ca.crt
  (leave.py's reinit_cluster makes new dqlite cluster.crt/key, rebuild_x509_auth_client_configs
  new client certificates from the CA there is), a worker's leave removes ca.remote.crt (1.28 and
  1.35 alike);
- remove-node of a node unknown to Kubernetes exits 1 even when --force removed it from dqlite;
  remove-node finds a node by name or any InternalIP and its dqlite member by the node's first
  InternalIP (remove_node.py, node_objects.py): given a node whose status lists another address
  first ($FAKE_MICROK8S_NODE_IPS, comma-separated, in that order; the address alone otherwise),
  --force deletes the Kubernetes node, exits 0 and leaves the member in dqlite;
- leave (scripts/wrappers/leave.py, 1.28 and 1.35 alike): the node leaves dqlite and goes back to
  a cluster of its own, printing "Generating new cluster certificates." and "Waiting for node to
  start." (a worker first "Configuring services."); its Kubernetes node stays, NotReady, until
  remove-node; the one voter of a cluster with other members cannot leave:
  is_leader_without_successor's three lines, exit 3 (a node alone can).

Two releases (canonical/microk8s branches 1.28 and 1.35). A node tracks a channel, 1.NN/<risk>
($FAKE_MICROK8S_CHANNEL when the node is created, else 1.28/stable; `snap install microk8s
--channel=...` through a link named ``snap``); what differs follows the node's release:
- join on the joiner (scripts/wrappers/join.py, diff 1.28..1.35): 1.35 first checks the
  connection string (common/cluster/utils.py get_valid_connection_parts: "Invalid connection:
  <reason>", exit 1) and ends every successful join with "Successfully joined the cluster.";
  1.28 prints update_dqlite()'s "Waiting for this node to finish joining the cluster." line (a
  control-plane joiner) or print_worker_usage() (a worker), and nothing after;
- the agent's refusal of a joiner dqlite already knows (microk8s-cluster-agent): branch 1.28,
  pkg/api/v2/join.go, "the joining node (<ip>) is already known to dqlite", HTTP 504; the agent
  1.35 builds (build-scripts/components/cluster-agent/version.sh; the current agent:
  pkg/snap/util/dqlite.go MaybeUpdateDqliteBindAddress, wrapped by join.go) "failed to retrieve
  dqlite cluster nodes: the joining node (<ip>) is already known to dqlite", HTTP 500;
- status is the same in both (scripts/wrappers/status.py has no diff 1.28..1.35), and so is
  microk8s-kubectl.wrapper's answer on a --worker node (a message, exit 0).

Also reproduced:
- $SNAP_DATA/args/kubelet, the kubelet's arguments: the install hook's copy of default-args
  (snap/hooks/install), replaced at a join by the arguments of the node joined
  (join.py store_base_kubelet_args); `snap restart microk8s.daemon-kubelite`, which microk8s'
  restart_service runs after an argument change (actions/common/utils.sh), makes the node not
  ready for ``restart_seconds`` like a refresh (status exits 1, kubectl is refused) and prints
  "Restarted." (snapd cmd/snap/cmd_services.go); $SNAP_DATA/args/kube-apiserver, the API
  server's, the install hook's copy too (kube_objects.py), which a join keeps;
- `snap refresh microk8s --channel=X` changes the release (with --no-wait it prints the change's
  id, which `snap watch ID` waits for: snapd.py); the services restart, and for
  ``restart_seconds`` (fake/faults.json, default 2) the node is not ready: status.py prints
  print_yaml(isReady=False) (running: False, the high-availability block, the message) and exits 1
  (its last lines: `if not is_ready: sys.exit(1)`); kubectl cannot reach the API server
  (kubectl pkg/cmd/util/helpers.go: "The connection to the server 127.0.0.1:16443 was refused -
  did you specify the right host or port?", exit 1); `snap list microk8s` prints snapd's table
  (cmd/snap/cmd_list.go outputSnapsDefault: Name Version Rev Tracking Publisher Notes);
- kubectl get nodes -o json: status.nodeInfo.kubeletVersion (v<version> of the node's release)
  and spec.unschedulable, which the API omits while false (core/v1 NodeSpec, omitempty); a node
  is Ready while its microk8s runs and it belongs to this cluster (see kubectl_nodes);
- kubectl get node <n> -o json (one Node), label, taint and annotate <node>: labels (the
  kubelet's and microk8s' own until written), annotations and spec.taints kept with the node in
  the cluster's database, as microk8s_core/node_objects.py (shared by both fakes)
  reproduces them and cites kubectl for each behaviour;
- kubectl patch node <n> (spec.providerID, from "" only: node_objects.py);
- the OpenStack cloud controller manager's effect on Nodes (microk8s_core/cloud_controller.py, both
  fakes): a joiner's Node registers with the uninitialized taint when the kubelet arguments it
  takes from the node joined say --cloud-provider=external; once kubectl applied the controller's
  DaemonSet and the cloud-config Secret, and $FAKE_MICROK8S_CLUSTER/.nova/servers.json lists the
  project's servers, every kubectl first lets it initialize the tainted Nodes it finds and delete
  the NotReady ones whose server is gone; fake/faults.json "not_ready" keeps a running node's
  kubelet reporting it not Ready;
- kubectl apply -f - (the manifest on stdin, --dry-run=server too), get and annotate of other
  objects (Secrets, StorageClasses, RBAC, DaemonSets, ...), kept with the cluster's database under
  "objects", as microk8s_core/kube_objects.py (shared by both fakes) reproduces them;
  the record of every object kubectl applied: $FAKE_MICROK8S_DIR/fake/objects.json, a JSON map
  "<Kind>/<namespace>/<name>" (namespace empty when cluster-scoped) -> the object as the API
  server keeps it (a Secret's data base64-encoded), written after every change; `enable
  hostpath-storage` adds the addon's default StorageClass microk8s-hostpath;
- kubectl cordon/uncordon/drain <node> (kubectl pkg/cmd/drain/drain.go RunCordonOrUncordon and
  RunDrain: "node/<n> cordoned", "already cordoned", "uncordoned", "already uncordoned",
  "drained"; without --ignore-daemonsets drain stops at Calico's calico-node DaemonSet pod, which
  microk8s runs on every node, pkg/drain/filters.go daemonSetFatal); an unknown node is
  `Error from server (NotFound): nodes "<n>" not found` on stderr, exit 1 (helpers.go
  standardErrorMessage; apimachinery's NewNotFound);
- the join fingerprint: $SNAP_DATA/certs/server.crt is a PEM block; add-node's check is
  microk8s-resources/actions/common/utils.sh server_cert_check (sha256 of the DER, 12 hex
  characters); join compares it with the master's certificate before it posts anything
  (join.py join_request: "Joining cluster failed. Could not verify the identity of <ip>. ...",
  exit 4; the token is not spent); --skip-verify skips it; `refresh-certs --cert server.crt`
  (scripts/wrappers/refresh_certs.py reproduce_server_cert: refresh_csr_conf; gen_server_cert)
  renders certs/csr.conf from the template again and writes a new certificate naming its every
  IP.n (the extra SANs Salt writes among them), hence a new check; the install renders csr.conf
  too, and a join keeps it (microk8s_core/server_cert.py, shared by both). The
  master's certificate is read from its $SNAP_DATA, which stands in for the TLS handshake.

Faults a test injects through $FAKE_MICROK8S_DIR/fake/faults.json (a JSON object; each count is
spent one use at a time, and the key is removed at 0):
- ``status_dqlite_empty``: N: the next N status outputs print `nodes:` with no member while
  high availability is on: common/utils.py get_dqlite_info returns [] when its dqlite query keeps
  failing for its 10 tries;
- ``join_dqlite_error``: N (and ``join_dqlite_error_text``, default "timed out waiting for
  cluster condition: context deadline exceeded", pkg/snap/util/dqlite.go WaitForDqliteCluster):
  this node's agent answers the next N joins, after spending the token and checking the
  hostname, with HTTP 500 "failed to retrieve dqlite cluster nodes: <text>" (join.go), the
  prefix doubled by a 1.35 agent (MaybeUpdateDqliteBindAddress wraps it once more);
- ``restart_seconds``: the not-ready window after a snap refresh, a boot or a kubelite restart;
- ``auto_refresh_in_progress``: N: the next N `snap refresh microk8s ...` fail as snapd refuses a
  change to a snap while another runs: `error: snap "microk8s" has "auto-refresh" change in
  progress`, exit 1 (overlord/snapstate/conflict.go ChangeConflictError); `snap watch
  --last=auto-refresh` then finds that change done;
- ``refresh_fails``: N: the next N refreshes to another channel fail in their change (the new
  revision's services do not start) and are undone: the snap keeps its channel (snapd.py).

snapd's auto-refresh (``microk8s fake-auto-refresh``, no such command in microk8s), `snap refresh
--hold microk8s` and `--unhold`, and the hold in `snap list`'s notes: microk8s_core/snapd.py,
shared by both.

A machine's boot, for the harness's ``systemctl reboot`` (__tests__/harness/fake_systemctl.py):
``microk8s fake-boot`` (no such command in microk8s) gives the node a new boot id, which kubectl
reports as status.nodeInfo.bootID while the node is Ready (core/v1 NodeSystemInfo.BootID: the
kubelet reads /proc/sys/kernel/random/boot_id, new at every boot), and starts its services, which
are not ready for ``restart_seconds`` (the snap's daemons start with the machine).
"""

import base64
import contextlib
import fcntl
import hashlib
import ipaddress
import json
import os
import re
import secrets
import sys
import time
import uuid
from pathlib import Path

# The core both fakes share, microk8s_core, beside this fake's folder in __tests__/doubles.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from microk8s_core import cloud_controller, dqlite, kube_objects, node_objects, server_cert, snapd

HOME = Path(os.environ["FAKE_MICROK8S_DIR"])
ADDRESS = os.environ.get("FAKE_MICROK8S_ADDRESS", "10.1.0.10")
HOSTNAME = os.environ.get("FAKE_MICROK8S_HOSTNAME", "k8s-master")
# The node's InternalIPs in the order its status lists them, when not ADDRESS alone (node_objects.py).
NODE_IPS = [ip for ip in os.environ.get("FAKE_MICROK8S_NODE_IPS", "").split(",") if ip]
CLUSTER = Path(os.environ.get("FAKE_MICROK8S_CLUSTER", str(HOME / "cluster")))
CHANNEL = os.environ.get("FAKE_MICROK8S_CHANNEL", "1.28/stable")
AGENT_PORT = 25000
DQLITE_PORT = 19001
WORKER_LOCK = Path("var/lock/clustered.lock")
TOKENS = Path("credentials/cluster-tokens.txt")
SERVER_CRT = Path("certs/server.crt")
CA_CRT = Path("certs/ca.crt")
CA_KEY = Path("certs/ca.key")
REMOTE_CA = Path("certs/ca.remote.crt")
KUBELET_ARGS = Path("args/kubelet")
APISERVER_ARGS = Path("args/kube-apiserver")
# microk8s-resources/default-args/kubelet's first lines: the install hook copies default-args to
# $SNAP_DATA/args (snap/hooks/install); nothing here reads them, they only keep the file honest.
DEFAULT_KUBELET_ARGS = (
    "--kubeconfig=${SNAP_DATA}/credentials/kubelet.config\n"
    "--cert-dir=${SNAP_DATA}/certs\n"
    "--client-ca-file=${SNAP_DATA}/certs/ca.crt\n"
    "--anonymous-auth=false\n"
    "--fail-swap-on=false\n"
)
# The one service `snap restart` is reproduced for (snapd's app name; microk8s' restart_service
# restarts it for any kubelet, API server, scheduler or controller-manager argument change).
KUBELITE_APP = "microk8s.daemon-kubelite"
# The clusters' databases, by cluster id: dqlite's copies, which no single node's rebuild loses.
DATABASES = CLUSTER / ".dqlite"
FAULTS = Path("fake/faults.json")
ADDONS = {"dns": "disabled", "hostpath-storage": "disabled", "ha-cluster": "enabled", "registry": "disabled"}
# The patch release each track's stable channel is taken to carry; other tracks get .0.
PATCH = {28: "1.28.15"}
RISKS = ("stable", "candidate", "beta", "edge")
# common/cluster/utils.py (1.35): the token and fingerprint minimum lengths (its TOKEN_MIN_LEN is
# spelt with Greek capitals there).
TOKEN_MIN_LEN = 32
FINGERPRINT_MIN_LEN = 12
# microk8s-kubectl.wrapper on a node joined with --worker (1.28 and 1.35 alike): exit 0.
WORKER_KUBECTL = (
    "This MicroK8s deployment is acting as a node in a cluster. Please use the microk8s kubectl on the master."
)
# kubectl pkg/cmd/util/helpers.go standardErrorMessage for a refused connection (kubelite restarting).
API_DOWN = "The connection to the server 127.0.0.1:16443 was refused - did you specify the right host or port?"
# This node's state as this command holds it (main): what it is to the others, before it is saved.
ME: dict = {}
NOT_RUNNING = "microk8s is not running. Use microk8s inspect for a deeper inspection."
# admit()'s answer when a control-plane join finds no quorum: the joiner waits in vain.
STALLED = -1


def release(channel: str) -> int | None:
    """The minor version a channel 1.NN/<risk> tracks; None for any other channel."""
    match = re.fullmatch(r"1\.(\d+)/(\w+)", channel)
    return int(match.group(1)) if match and match.group(2) in RISKS else None


def version(state: dict) -> str:
    minor = release(state["channel"]) or 28
    return PATCH.get(minor, f"1.{minor}.0")


def minor(state: dict) -> int:
    return release(state["channel"]) or 28


def load(home: Path) -> dict:
    path = home / "state.json"
    state = json.loads(path.read_text()) if path.exists() else {}
    defaults = {"running": True, "addons": dict(ADDONS), "cluster": None, "address": None, "hostname": None}
    defaults.update(channel=CHANNEL if release(CHANNEL) else "1.28/stable", snap_installed=False, restart_until=0)
    return {**defaults, **state}


def write_whole(path: Path, data: object) -> None:
    """
    ``data`` as JSON at ``path``, renamed over the old file: the other nodes read it without a lock
    (live, database), and a file truncated in place would let them see it empty.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


def save(home: Path, state: dict) -> None:
    write_whole(home / "state.json", state)


def restarting(state: dict) -> bool:
    return time.time() < state["restart_until"]


def database(state: dict) -> dict:
    """
    The dqlite members and Kubernetes nodes of the cluster ``state`` belongs to; a node that
    never formed a cluster with another has none written yet: itself alone.
    """
    path = DATABASES / f"{state['cluster']}.json"
    if path.exists():
        return json.loads(path.read_text())
    return {
        "members": [{"address": f"{state['address']}:{DQLITE_PORT}", "role": "voter"}],
        "nodes": [
            {
                "name": state["hostname"],
                "address": state["address"],
                "version": version(state),
                **({"internal_ips": state["internal_ips"]} if state.get("internal_ips") else {}),
            }
        ],
    }


def internal_ips() -> dict:
    """This node's entry's "internal_ips" when its status lists more than ADDRESS (node_objects.py)."""
    return {"internal_ips": NODE_IPS} if NODE_IPS and NODE_IPS != [ADDRESS] else {}


def live(address: str, cluster: str) -> bool:
    """
    Whether the dqlite of the node at ``address`` answers in ``cluster``: its microk8s runs and it
    belongs to that cluster (a machine rebuilt at the address runs one of its own). A node
    restarting after a refresh still answers (k8s-dqlite comes back at once, the API server does
    not), as in the rehearsal's fake.
    """
    if address == ADDRESS and ME:
        other = ME
    else:
        link = CLUSTER / address
        if not link.exists():
            return False
        other = load(link.resolve())
    return bool(other["running"]) and other["cluster"] == cluster


def online(db: dict, cluster: str) -> set[str]:
    """The members' hosts whose dqlite answers (live)."""
    return {dqlite.host_of(m) for m in db["members"] if live(dqlite.host_of(m), cluster)}


def quorate(state: dict, db: dict) -> bool:
    """Whether a majority of the voters answers: any read or write of the cluster's database needs it (dqlite.py)."""
    return dqlite.majority(db["members"], online(db, state["cluster"]))


def save_database(state: dict, db: dict, joining: str | None = None) -> None:
    """
    A write of the cluster's database, the roles adjusted as go-dqlite's leader does (dqlite.py;
    the leader every 30 s, the fake at every write). ``joining``: a node being added, which answers.
    """
    on = online(db, state["cluster"]) | ({joining} if joining else set())
    dqlite.adjust_roles(db["members"], on, dqlite.leader(db["members"], on))
    DATABASES.mkdir(parents=True, exist_ok=True)
    write_whole(DATABASES / f"{state['cluster']}.json", db)


def new_server_certificate(home: Path) -> None:
    """gen_server_cert, from csr.conf (server_cert.py); the node's one address is its get_ips."""
    (home / SERVER_CRT).parent.mkdir(parents=True, exist_ok=True)
    server_cert.gen_server_cert(home, [ADDRESS])


def store_cert(home: Path, name: Path, payload: str) -> None:
    """join.py store_cert: the file kept as <name>.backup, then the payload written."""
    path = home / name
    if path.exists():
        path.with_name(f"{path.name}.backup").write_text(path.read_text())
    path.write_text(payload)


def certificate_der(home: Path) -> bytes:
    """What ssl.PEM_cert_to_DER_cert returns for the node's server.crt."""
    text = (home / SERVER_CRT).read_text()
    inner = text.split("-----BEGIN CERTIFICATE-----")[1].split("-----END CERTIFICATE-----")[0]
    return base64.decodebytes(inner.encode())


def server_cert_check(home: Path) -> str:
    """utils.sh server_cert_check: sha256 of server.crt in DER, its first 12 hex characters."""
    return hashlib.sha256(certificate_der(home)).hexdigest()[:12]


def register(state: dict) -> None:
    CLUSTER.mkdir(parents=True, exist_ok=True)
    link = CLUSTER / ADDRESS
    if not link.is_symlink():
        link.symlink_to(HOME)
    state.update(address=ADDRESS, hostname=HOSTNAME, **internal_ips())
    template = HOME / "certs" / "csr.conf.template"
    if not template.exists():
        template.parent.mkdir(parents=True, exist_ok=True)
        template.write_text("[ alt_names ]\nDNS.1 = kubernetes\nIP.1 = 127.0.0.1\n#MOREIPS\n")
    # The install hook's produce_certs: a CA of this install's own, only when there is none.
    server_cert.produce_ca(HOME)
    if not (HOME / SERVER_CRT).exists():
        new_server_certificate(HOME)
    if not (HOME / KUBELET_ARGS).exists():
        (HOME / KUBELET_ARGS).parent.mkdir(parents=True, exist_ok=True)
        (HOME / KUBELET_ARGS).write_text(DEFAULT_KUBELET_ARGS)
    if not (HOME / APISERVER_ARGS).exists():
        # default-args/kube-apiserver (kube_objects.py), which a join keeps but for
        # --authorization-mode and --secure-port (join.py update_apiserver).
        (HOME / APISERVER_ARGS).write_text(kube_objects.DEFAULT_APISERVER_ARGS)
    # A node of its own until it joins: a cluster id no other node has.
    state["cluster"] = state["cluster"] or secrets.token_hex(8)
    state["boot_id"] = state.get("boot_id") or str(uuid.uuid4())


@contextlib.contextmanager
def locked(home: Path, name: str = ".lock"):
    """The cluster agent's mutexes: one change at a time to a node's tokens, or a cluster's database."""
    home.mkdir(parents=True, exist_ok=True)
    with (home / name).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def database_locked(state: dict):
    return locked(DATABASES, f"{state['cluster']}.lock")


def fault(home: Path, name: str) -> dict | None:
    """Spends one use of fault ``name`` in the node's fake/faults.json; the faults, or None when unset."""
    path = home / FAULTS
    path.parent.mkdir(parents=True, exist_ok=True)
    # A lock of its own: the agent's (locked) is already held when a join spends a fault.
    with (home / ".faults.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        faults = json.loads(path.read_text()) if path.exists() else {}
        if int(faults.get(name, 0)) <= 0:
            return None
        faults[name] = int(faults[name]) - 1
        if faults[name] == 0:
            del faults[name]
        path.write_text(json.dumps(faults))
    return faults


def setting(home: Path, name: str, default):
    path = home / FAULTS
    return json.loads(path.read_text()).get(name, default) if path.exists() else default


def worker_refusal() -> int:
    """microk8s-status.wrapper on a node joined with --worker: a message, exit 0 (1.28 and later)."""
    print("This MicroK8s deployment is acting as a node in a cluster.")
    print("Please use the control plane node.")
    return 0


def members_listed(state: dict) -> list[dict]:
    """get_dqlite_info: the members, or [] when the dqlite query failed its 10 tries (no quorum, a fault)."""
    db = database(state)
    if fault(HOME, "status_dqlite_empty") is not None or not quorate(state, db):
        return []
    return db["members"]


def status(state: dict) -> int:
    if (HOME / WORKER_LOCK).exists():
        return worker_refusal()
    # is_cluster_ready: kubectl get all / get nodes, which fail without the datastore's quorum.
    ready = state["running"] and not restarting(state) and quorate(state, database(state))
    print("microk8s:")
    print(f"  running: {ready}")
    print("high-availability:")
    if not state["running"]:
        # status.py print_yaml with isReady false: the message under high-availability.
        print("  enabled: False")
        print(f"  message: {NOT_RUNNING}")
        return 0
    ha = state["addons"].get("ha-cluster") == "enabled"
    print(f"  enabled: {ha}")
    if ha:
        print("  nodes:")
        for member in members_listed(state):
            print(f"    - address: {member['address']}\n      role: {member['role']}")
    if not ready:
        # Restarting after a refresh, or no quorum: print_yaml(isReady=False), then status.py exits 1.
        print(f"  message: {NOT_RUNNING}")
        return 1
    print("addons:")
    for name, addon_status in state["addons"].items():
        print(f"  - name: {name}\n    description: {name}\n    version: {version(state)}\n    status: {addon_status}")
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
    check = server_cert_check(HOME)
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


def join(state: dict, args: list[str]) -> int:
    connection = args[0]
    if minor(state) >= 35:
        reason = invalid_connection(connection)
        if reason:
            print("Invalid connection:", reason)
            return 1
    parts = connection.split("/")
    host_port, token = parts[:2]
    host = host_port.split(":")[0]
    worker = "--worker" in args
    # join_dqlite: without a fingerprint in the connection string nothing is verified.
    fingerprint = parts[2] if len(parts) > 2 else None
    print(f"Contacting cluster at {host}")
    target = CLUSTER / host
    if not target.exists() or not load(target.resolve())["running"]:
        print("Traceback (most recent call last):", file=sys.stderr)
        print("ConnectionRefusedError: [Errno 111] Connection refused", file=sys.stderr)
        return 1
    master = target.resolve()
    # join_request: the peer's certificate is checked before the join is posted.
    if fingerprint and "--skip-verify" not in args:
        skip = " Use '--skip-verify' to skip server certificate check."
        if len(fingerprint) < FINGERPRINT_MIN_LEN:
            print(f"Joining cluster failed. Fingerprint too short.{skip}")
            return 4
        if not hashlib.sha256(certificate_der(master)).hexdigest().startswith(fingerprint):
            print(f"Joining cluster failed. Could not verify the identity of {host}.{skip}")
            return 4
    with locked(master), database_locked(load(master)):
        code = admit(state, master, token, worker)
    if code == STALLED:
        # update_dqlite without a quorum: its ten `dqlite .cluster` tries fail (".." each), then
        # print(" "); join.py carries on and exits 0, the node not a member.
        print("Waiting for this node to finish joining the cluster. " + ".. " * 10 + " ")
        if minor(state) >= 35:
            print("Successfully joined the cluster.")
        return 0
    if code == 0:
        joined(state, worker)
    return code


def admit(state: dict, master: Path, token: str, worker: bool) -> int:
    if not consume(master, token):
        return refused("invalid token (500)")
    hosts = master / "etc-hosts"
    if hosts.exists() and not resolves(hosts.read_text(), HOSTNAME, ADDRESS):
        return refused(
            f'the hostname ({HOSTNAME}) of the joining node does not resolve to the IP "{ADDRESS}". Refusing join (400)'
        )
    master_state = load(master)
    # The agent's version is its node's: branch 1.28's join.go, or MaybeUpdateDqliteBindAddress's wrapping.
    current_agent = minor(master_state) >= 29
    faults = fault(master, "join_dqlite_error")
    if faults is not None:
        text = faults.get(
            "join_dqlite_error_text", "timed out waiting for cluster condition: context deadline exceeded"
        )
        prefix = "failed to retrieve dqlite cluster nodes: "
        return refused(f"{prefix * (2 if current_agent else 1)}{text} (500)")
    db = database(master_state)
    # Only dqlite members are checked: a rebuilt worker (never a member) simply joins again.
    if any(m["address"].startswith(f"{ADDRESS}:") for m in db["members"]):
        known = f"the joining node ({ADDRESS}) is already known to dqlite"
        if current_agent:
            return refused(f"failed to retrieve dqlite cluster nodes: {known} (500)")
        return refused(f"{known} (504)")
    if not quorate(master_state, db):
        if worker:
            # join.go (worker): ListControlPlaneNodeIPs lists the nodes through the API server.
            listing = f"failed to list nodes: {dqlite.TIMED_OUT} (get nodes)"
            return refused(f"failed to retrieve list of control plane nodes: {listing} (500)")
        # The agent answers from its local cluster.yaml (no quorum needed); the joiner's dqlite
        # then asks the leader to add it, in vain.
        state["cluster"] = master_state["cluster"]
        return STALLED
    if not worker:
        # go-dqlite: a node joins as a spare (client.Add) and takes its startup role (dqlite.py).
        dqlite.join(db["members"], f"{ADDRESS}:{DQLITE_PORT}", online(db, master_state["cluster"]) | {ADDRESS})
    # A kubelet whose Node exists takes it over, with the providerID the API server never changes
    # once set (kubelet_node_status.go tryRegisterWithAPIServer; ValidateNodeUpdate).
    taken = next((n for n in db["nodes"] if n["address"] == ADDRESS and n.get("providerID")), None)
    # A new Node has the taints of the kubelet arguments the joiner takes from the node it joins
    # (below): with --cloud-provider=external, the uninitialized one (cloud_controller.py).
    args = (master / KUBELET_ARGS).read_text() if (master / KUBELET_ARGS).exists() else None
    taints = [] if taken else cloud_controller.registration_taints(args)
    db["nodes"] = [n for n in db["nodes"] if n["address"] != ADDRESS] + [
        # join.py join_dqlite_worker_node starts a worker's kubelet with the worker's --node-labels.
        {
            "name": HOSTNAME,
            "address": ADDRESS,
            "version": version(state),
            **internal_ips(),
            **({"worker": True} if worker else {}),
            **({"providerID": taken["providerID"]} if taken else {}),
            **({"taints": taints} if taints else {}),
        }
    ]
    save_database(master_state, db, joining=ADDRESS)
    state["cluster"] = master_state["cluster"]
    # The agent's answer carries its node's kubelet arguments (microk8s-cluster-agent
    # pkg/api/v2 JoinResponse.KubeletArgs), which join.py writes over the joiner's own
    # (store_base_kubelet_args, for worker and control-plane joins alike).
    if (master / KUBELET_ARGS).exists():
        (HOME / KUBELET_ARGS).parent.mkdir(parents=True, exist_ok=True)
        (HOME / KUBELET_ARGS).write_text((master / KUBELET_ARGS).read_text())
    # The agent's answer carries the CA of the node it runs on (join.go: Snap.ReadCA), and its key
    # for a control-plane joiner only (ca_key is null for a worker).
    ca = (master / CA_CRT).read_text()
    if worker:
        # join_dqlite_worker_node: store_remote_ca; the worker's own ca.crt stays.
        (HOME / REMOTE_CA).write_text(ca)
        (HOME / WORKER_LOCK).parent.mkdir(parents=True, exist_ok=True)
        (HOME / WORKER_LOCK).touch()
    else:
        # join_dqlite_master_node: store_cert ca.crt and ca.key; the apiservice-kicker's
        # ensure_server_ca then finds server.crt not issued by that CA and issues a new one.
        store_cert(HOME, CA_CRT, ca)
        store_cert(HOME, CA_KEY, (master / CA_KEY).read_text())
        new_server_certificate(HOME)
    return 0


def joined(state: dict, worker: bool) -> None:
    """What join.py prints once joined: the joiner's release decides (diff 1.28..1.35)."""
    if worker:
        # print_worker_usage, in 1.28 and 1.35 alike.
        print("\nThe node has joined the cluster and will appear in the nodes list in a few seconds.\n")
        print("This worker node gets automatically configured with the API server endpoints.")
        print("If the API servers are behind a loadbalancer please set the '--refresh-interval' to '0s' in:")
        print("    /var/snap/microk8s/current/args/apiserver-proxy")
        print("and replace the API server endpoints with the one provided by the loadbalancer in:")
        print("    /var/snap/microk8s/current/args/traefik/provider.yaml\n")
    else:
        # update_dqlite: the wait for dqlite (end=" "), then print(" ").
        print("Waiting for this node to finish joining the cluster.  ")
    if minor(state) >= 35:
        print("Successfully joined the cluster.")


def leave(state: dict) -> int:
    """
    leave.py (1.28 and 1.35 alike): a worker resets its services; a control-plane node leaves
    dqlite, unless it is the one voter of a cluster with other members (is_leader_without_successor, exit 3).
    Either goes back to a cluster of its own; its Kubernetes node stays until remove-node.
    """
    worker = (HOME / WORKER_LOCK).exists()
    with database_locked(state):
        db = database(state)
        if not worker and not quorate(state, db):
            # is_leader_without_successor's `dqlite .cluster` needs the leader: check_output raises.
            return dqlite_traceback()
        return left(state, worker, db)


def left(state: dict, worker: bool, db: dict) -> int:
    others = [m for m in db["members"] if not m["address"].startswith(f"{ADDRESS}:")]
    if not worker and dqlite.leader_without_successor(db["members"], {ADDRESS}):
        print("This node currently holds the only copy of the Kubernetes database so it cannot leave the cluster.")
        print("To remove this node you can either first remove all other nodes with 'microk8s remove-node' or")
        print("form a highly available cluster by adding at least three nodes.")
        return 3
    if worker:
        print("Configuring services.")
        # reset_current_dqlite_worker_installation: os.remove(ca_cert_file), the ca.remote.crt.
        (HOME / REMOTE_CA).unlink(missing_ok=True)
    db["members"] = others
    save_database(state, db)
    # reinit_cluster: new dqlite cluster certificates (not a new CA: ca.crt stays), a cluster of its own.
    state["cluster"] = secrets.token_hex(8)
    (HOME / WORKER_LOCK).unlink(missing_ok=True)
    print("Generating new cluster certificates.\nWaiting for node to start.  ")
    return 0


def remove_node(state: dict, args: list[str]) -> int:
    """
    remove_node.py: by name or any InternalIP; the dqlite member by the node's first InternalIP
    (node_objects.removal_target); --force also drops that member.
    """
    if (HOME / WORKER_LOCK).exists():
        print("This MicroK8s deployment is acting as a node in a cluster. Please use microk8s leave.")
        return 1
    node, force = args[0], "--force" in args
    db = database(state)
    if not quorate(state, db):
        # kubectl get no fails (CalledProcessError): "does not exist in Kubernetes"; with --force
        # get_dqlite_endpoints' dqlite query then fails too.
        print(f"Node {node} does not exist in Kubernetes.")
        if force:
            print(f"Attempting to remove {node} from dqlite.")
            return dqlite_traceback()
        return 1
    found, address = node_objects.removal_target(db["nodes"], node)
    in_dqlite = any(m["address"].startswith(f"{address}:") for m in db["members"])
    if found and in_dqlite and not force:
        advice = "Please, run first 'microk8s leave' on the departing node."
        print(f"Removal failed. Node {node} is registered with dqlite. {advice}")
        return 1
    if force:
        db["members"] = [m for m in db["members"] if not m["address"].startswith(f"{address}:")]
    db["nodes"] = [n for n in db["nodes"] if n is not found]
    save_database(state, db)
    if not found:
        print(f"Node {node} does not exist in Kubernetes.")
        if force and in_dqlite:
            print(f"Attempting to remove {node} from dqlite.")
            print("Removing node entry found in dqlite.")
        return 1
    return 0


def dqlite_traceback() -> int:
    """leave.py / remove_node.py: `dqlite .cluster` fails without a leader, and check_output raises."""
    print(dqlite.NO_LEADER_TRACEBACK, file=sys.stderr)
    return 1


def ready(node: dict, cluster: str) -> bool:
    """
    A kubelet posts its node's status to the API server of the cluster it joined (its kubeconfig,
    written by join.py); the node lifecycle controller turns Ready to Unknown when those posts
    stop. So a node is Ready while its microk8s runs (not restarting) and its node is still a
    member of this cluster: a machine rebuilt at the same address runs a cluster of its own.
    """
    link = CLUSTER / node["address"]
    if not link.exists():
        return False
    other = load(link.resolve())
    # fake/faults.json "not_ready": a kubelet that runs but reports its node not Ready (its
    # container network not ready yet, say), until the setting goes.
    posting = not setting(link.resolve(), "not_ready", False)
    return other["running"] and not restarting(other) and other["cluster"] == cluster and posting


def cloud_controllers(state: dict) -> None:
    """
    The OpenStack cloud controller manager's work since the last command (cloud_controller.py),
    with $FAKE_MICROK8S_CLUSTER/.nova/servers.json for the cloud's servers: the database written
    back when it changed a Node.
    """
    listing = cloud_controller.servers(CLUSTER / ".nova" / "servers.json")
    if listing is None:
        # No cloud to ask: no controller to model, and no database to lock and read for it.
        return
    with database_locked(state):
        db = database(state)
        if cloud_controller.reconcile(
            db["nodes"], db.get("objects", {}), listing, lambda n: ready(n, state["cluster"])
        ):
            save_database(state, db)


def node_item(state: dict, node: dict) -> dict:
    """One Node as the API server returns it (node_objects.py: its metadata, spec and taints)."""
    link = CLUSTER / node["address"]
    kubelet = load(link.resolve()) if link.exists() else None
    is_ready = ready(node, state["cluster"])
    # The kubelet reports its version and boot id with its status; the last one reported stays otherwise.
    kubelet_version = version(kubelet) if is_ready else node.get("version") or version(kubelet or state)
    boot_id = (kubelet or {}).get("boot_id") if is_ready else node.get("boot_id")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": node_objects.metadata(node),
        "spec": node_objects.spec(node),
        "status": {
            "addresses": node_objects.status_addresses(node),
            "conditions": [{"type": "Ready", "status": "True" if is_ready else "Unknown"}],
            "nodeInfo": {"kubeletVersion": f"v{kubelet_version}", "bootID": boot_id or ""},
        },
    }


def kubectl_nodes(state: dict) -> int:
    db = database(state)
    items = [node_item(state, node) for node in db["nodes"]]
    for item in items:
        del item["apiVersion"], item["kind"]
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return 0


def kubectl_node(state: dict, name: str) -> int:
    """kubectl get node NAME -o json: the Node object, or NotFound."""
    db = database(state)
    found = next((n for n in db["nodes"] if n["name"] == name), None)
    if found is None:
        code, _, err, _ = node_objects.not_found(name)
        print(err, end="", file=sys.stderr)
        return code
    print(json.dumps(node_item(state, found)))
    return 0


def kubectl_metadata(state: dict, verb: str, args: list[str]) -> int:
    """kubectl label / taint / annotate on one node (node_objects.py): the database written back on a change."""
    db = database(state)
    names = operands(args)
    name = names[1] if names[:1] and names[0] in ("node", "nodes", "no") and len(names) > 1 else None
    if names[:1] and "/" in names[0]:
        name = names[0].split("/", 1)[1]
    found = next((n for n in db["nodes"] if n["name"] == name), None)
    if verb == "label":
        code, out, err, changed = node_objects.label(found, args)
    elif verb == "taint":
        code, out, err, changed = node_objects.taint(found, args)
    else:
        code, out, err, changed = node_objects.annotate(found, args)
    if changed:
        save_database(state, db)
    print(out, end="")
    print(err, end="", file=sys.stderr)
    return code


def node_word(args: list[str]) -> bool:
    """Whether kubectl's first operand names Nodes (node, nodes, no, node/NAME)."""
    names = operands(args)
    return bool(names) and names[0].split("/", 1)[0] in ("node", "nodes", "no")


def kubectl_patch(state: dict, args: list[str]) -> int:
    """kubectl patch node NAME (spec.providerID, node_objects.patch): the database written back on a change."""
    db = database(state)
    name = node_objects.patched_node(args)
    found = next((n for n in db["nodes"] if n["name"] == name), None)
    code, out, err, changed = node_objects.patch(found, args)
    if changed:
        save_database(state, db)
    print(out, end="")
    print(err, end="", file=sys.stderr)
    return code


def kubectl_objects(state: dict, verb: str, args: list[str]) -> int:
    """
    kubectl apply -f - (the manifest on stdin), get and annotate of objects other than Nodes
    (kube_objects.py), kept with the cluster's database; every change also written to the
    record, $FAKE_MICROK8S_DIR/fake/objects.json.
    """
    db = database(state)
    objects = db.setdefault("objects", {})
    if verb == "apply":
        if args[:2] != ["-f", "-"] or any(a not in ("-f", "-", "--dry-run=server") for a in args):
            print(f"fake microk8s: kubectl apply {' '.join(args)} is not reproduced", file=sys.stderr)
            return 2
        code, out, err, changed = kube_objects.apply(objects, sys.stdin.read(), "--dry-run=server" in args)
    elif verb == "get":
        code, out, err, changed = kube_objects.get(objects, args)
    else:
        code, out, err, changed = kube_objects.annotate(objects, args)
    return objects_written(state, db, (code, out, err, changed))


def objects_written(state: dict, db: dict, result: tuple[int, str, str, bool]) -> int:
    """Prints a kubectl result on the objects; when it changed them, writes the database and the record back."""
    code, out, err, changed = result
    if changed:
        save_database(state, db)
        kube_objects.record(HOME, db["objects"])
    print(out, end="")
    print(err, end="", file=sys.stderr)
    return code


def calico_pod(name: str) -> str:
    """The calico-node DaemonSet's pod on a node (reconcile.d/90-calico-apply applies Calico's manifest)."""
    return f"kube-system/calico-node-{hashlib.sha256(name.encode()).hexdigest()[:5]}"


def operands(args: list[str]) -> list[str]:
    """kubectl's arguments less its flags, and less the values of flags given apart (--timeout 5m)."""
    valued = {"--timeout", "--grace-period", "--pod-selector", "--selector", "-l", "--chunk-size", "-o", "--output"}
    return [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in valued)]


def kubectl_schedule(state: dict, verb: str, args: list[str]) -> int:
    """kubectl cordon / uncordon / drain <node> (drain.go RunCordonOrUncordon, RunDrain)."""
    names = operands(args)
    db = database(state)
    found = next((n for n in db["nodes"] if names and n["name"] == names[0]), None)
    if found is None:
        print(f'Error from server (NotFound): nodes "{names[0] if names else ""}" not found', file=sys.stderr)
        return 1
    name, desired = found["name"], verb != "uncordon"
    already = bool(found.get("unschedulable")) == desired
    found["unschedulable"] = desired
    save_database(state, db)
    print(f"node/{name} {'already ' if already else ''}{'cordoned' if desired else 'uncordoned'}")
    if verb != "drain":
        return 0
    return objects_written(
        state, db, node_objects.drain_pods(db.setdefault("objects", {}), name, args, calico_pod(name))
    )


def kubectl(state: dict, args: list[str]) -> int:
    if (HOME / WORKER_LOCK).exists():
        print(WORKER_KUBECTL)
        return 0
    if restarting(state) or not state["running"]:
        print(API_DOWN, file=sys.stderr)
        return 1
    if not quorate(state, database(state)):
        # The API server's datastore does not answer: its 504.
        print(dqlite.timed_out(args, operands(args[1:])), file=sys.stderr)
        return 1
    cloud_controllers(state)
    if args[:2] in (["get", "nodes"], ["get", "node"]) and len(operands(args)) == 3:
        return kubectl_node(state, operands(args)[2])
    if args[:2] == ["get", "nodes"]:
        return kubectl_nodes(state)
    if args[:1] in (["label"], ["taint"]) or (args[:1] == ["annotate"] and node_word(args[1:])):
        with database_locked(state):
            return kubectl_metadata(state, args[0], args[1:])
    if args[:1] == ["patch"] and node_word(args[1:]):
        with database_locked(state):
            return kubectl_patch(state, args[1:])
    if args[:1] in (["apply"], ["get"], ["annotate"]):
        with database_locked(state):
            return kubectl_objects(state, args[0], args[1:])
    if args[:1] in (["cordon"], ["uncordon"], ["drain"]):
        with database_locked(state):
            return kubectl_schedule(state, args[0], args[1:])
    print(f"fake microk8s: kubectl {' '.join(args)} is not reproduced", file=sys.stderr)
    return 2


def refresh_certs(args: list[str]) -> int:
    """refresh_certs.py --cert: a backup, a new certificate, the services restarted."""
    cert = args[args.index("--cert") + 1] if "--cert" in args else None
    if cert is None:
        print("Please use the '--cert' flag to select the certificate you need refreshed.")
        return 3
    print("Taking a backup of the current certificates under /var/snap/microk8s/current/certs-backup/")
    print("Creating new certificates")
    if cert == "server.crt":
        # reproduce_server_cert: refresh_csr_conf; gen_server_cert (the template's IP.n as they are now).
        server_cert.refresh_csr_conf(HOME, [ADDRESS])
        new_server_certificate(HOME)
        print("Restarting service kubelite.\nRestarting service cluster-agent.")
    return 0


def snap(state: dict, args: list[str]) -> int:
    """The snap command, for microk8s only: install, refresh (--hold, --unhold), list (snapd's cmd/snap)."""
    channel = next((a.split("=", 1)[1] for a in args if a.startswith("--channel=")), None)
    if args[:2] == ["list", "microk8s"]:
        row = f"v{version(state)}  {snapd.revision(state)}  {state['channel']}  canonical✓  {snapd.notes(state)}"
        print(f"Name      Version   Rev   Tracking     Publisher   Notes\nmicrok8s  {row}")
        return 0
    if args[:1] == ["restart"]:
        return snap_restart(state, args[1:])
    if snapd.is_hold_command(args):
        code, out, err = snapd.hold(state, args)
        print(out, end="")
        print(err, end="", file=sys.stderr)
        return code
    if args[:1] == ["watch"]:
        code, out, err = snapd.watch(state, args)
        print(out, end="")
        print(err, end="", file=sys.stderr)
        return code
    no_wait = "--no-wait" in args
    args = [a for a in args if a != "--no-wait"]
    if args[:2] == ["refresh", "microk8s"] and fault(HOME, "auto_refresh_in_progress") is not None:
        print(snapd.refused(state), file=sys.stderr)
        return 1
    if args[:2] not in (["install", "microk8s"], ["refresh", "microk8s"]):
        print(f"fake snap: unsupported {args}", file=sys.stderr)
        return 2
    if args[0] == "install" and state["snap_installed"]:
        print('snap "microk8s" is already installed')
        return 0
    if channel is not None and release(channel) is None:
        print(f"fake snap: channel {channel} is not reproduced (only 1.NN/<risk>)", file=sys.stderr)
        return 2
    if args[0] == "install":
        state.update(snap_installed=True, channel=channel or state["channel"])
        print(f"microk8s ({state['channel']}) v{version(state)} from Canonical✓ installed")
        return 0
    if channel is None or channel == state["channel"]:
        print('snap "microk8s" has no updates available')
        return 0
    if fault(HOME, "refresh_fails") is not None:
        # The change fails and snapd undoes it: the snap keeps its revision and channel.
        change = snapd.start_change(state, "refresh-snap", snapd.refresh_summary(channel), snapd.start_failure(state))
        if no_wait:
            print(change)
            return 0
        print(snapd.change_failed(state["changes"][change]["error"]), end="", file=sys.stderr)
        return 1
    change = snapd.start_change(state, "refresh-snap", snapd.refresh_summary(channel))
    state["channel"] = channel
    # The services restart with the new revision: not ready for a moment.
    state["restart_until"] = time.time() + float(setting(HOME, "restart_seconds", 2))
    with database_locked(state):
        db = database(state)
        # The kubelet reports its new version through the API server, which needs the quorum.
        if quorate(state, db):
            for node in db["nodes"]:
                if node["address"] == ADDRESS:
                    node["version"] = version(state)
            save_database(state, db)
    print(change if no_wait else f"microk8s ({channel}) v{version(state)} from Canonical✓ refreshed")
    return 0


def snap_restart(state: dict, services: list[str]) -> int:
    """
    `snap restart microk8s.daemon-kubelite` (snapd cmd/snap/cmd_services.go: it waits for the
    change, then prints "Restarted."). kubelite starts again, reading its arguments files: the
    node is not ready for ``restart_seconds``, as after a refresh.
    """
    if services != [KUBELITE_APP]:
        print(f"fake snap: restart {' '.join(services)} is not reproduced", file=sys.stderr)
        return 2
    state["restart_until"] = time.time() + float(setting(HOME, "restart_seconds", 2))
    print("Restarted.")
    return 0


def main(argv: list[str]) -> int:
    HOME.mkdir(parents=True, exist_ok=True)
    state = load(HOME)
    register(state)
    # One dict: what this node is to the others (live) changes with the command.
    ME.clear()
    ME.update(state)
    state = ME
    program, args = os.path.basename(argv[0]), argv[1:]
    with (HOME / "calls.log").open("a") as log:
        log.write(" ".join(["snap", *args] if program == "snap" else args) + "\n")
    command = args[0] if args else ""
    if program == "snap":
        code = snap(state, args)
    elif command == "status" and "--wait-ready" in args:
        # common/utils.py wait_for_ready: until ready, or past --timeout (0: no limit). A stopped
        # node answers at once, as this fake always has.
        timeout = int(args[args.index("--timeout") + 1]) if "--timeout" in args else 0
        deadline = time.time() + timeout if timeout else float("inf")

        def waiting() -> bool:
            return restarting(state) or not quorate(state, database(state))

        while state["running"] and waiting() and time.time() < deadline:
            time.sleep(0.1)
        code = 0 if state["running"] and not waiting() else 1
    elif command == "status":
        code = status(state)
    elif command in ("start", "stop"):
        state["running"] = command == "start"
        code = 0
    elif command == "fake-auto-refresh":
        snapd.auto_refresh(state, float(setting(HOME, "restart_seconds", 2)))
        code = 0
    elif command == "fake-boot":
        # The machine came up again (see the docstring): a new boot id, the services starting.
        state.update(boot_id=str(uuid.uuid4()), running=True)
        state["restart_until"] = time.time() + float(setting(HOME, "restart_seconds", 2))
        code = 0
    elif command in ("enable", "disable") and len(args) == 2:
        name = args[1].split(":", 1)[0]
        if name not in state["addons"]:
            print(f"Addon {name} was not found in any repository", file=sys.stderr)
            return 1
        if not quorate(state, database(state)):
            # The addon's scripts apply and delete through kubectl: the API server's 504.
            print(f"Error from server (Timeout): {dqlite.TIMED_OUT}", file=sys.stderr)
            return 1
        state["addons"][name] = "enabled" if command == "enable" else "disabled"
        if name == "hostpath-storage" and command == "enable":
            # The addon applies its default StorageClass (kube_objects.hostpath_storage_class).
            with database_locked(state):
                db = database(state)
                storage_class = kube_objects.hostpath_storage_class()
                db.setdefault("objects", {})[kube_objects.key(storage_class)] = storage_class
                save_database(state, db)
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
        with database_locked(state):
            code = remove_node(state, args[1:])
    elif command == "refresh-certs":
        code = refresh_certs(args[1:])
    elif command == "kubectl":
        code = kubectl(state, args[1:])
    else:
        print(f"fake microk8s: unsupported {args}", file=sys.stderr)
        return 2
    save(HOME, state)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
