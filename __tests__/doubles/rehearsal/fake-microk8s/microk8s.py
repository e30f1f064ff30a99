#!/usr/bin/python3
"""
The rehearsal's microk8s and snap: a fake that keeps state like the real one and talks between
hosts only over the network, through a cluster agent on port 25000, as microk8s does since 1.25
(canonical/microk8s-cluster-agent). Installed into every host's image, where /usr/bin/snap,
/usr/bin/microk8s and /snap/bin/microk8s run it through run.py (install.sh).

State, under the real paths:
- $SNAP_DATA (/var/snap/microk8s/current): fake/node.json (installed, running, the channel, the
  cluster's agent address, the id of the cluster the node belongs to), credentials/cluster-tokens.txt,
  var/lock/clustered.lock, certs/csr.conf.template, certs/csr.conf rendered from it and
  certs/server.crt issued from that (microk8s_core/server_cert.py, shared with the L4 fake:
  its subjectAltName lists every DNS.n and IP.n of csr.conf, the extra SANs Salt
  writes into the template among them, after `refresh-certs --cert server.crt`), and the CA,
  certs/ca.crt and ca.key (real X.509, as server_cert.py makes them);
- fake/cluster.json on every voter and stand-by: its copy of the cluster database (the cluster
  id, an index raised by every write, the dqlite members with their roles, the Kubernetes nodes
  with name, InternalIP, the kubelet version last reported and unschedulable, the cluster's
  addons); the install and leave write the cluster of its own a node starts with (dqlite on
  127.0.0.1, the node its only voter), a join replaces it, a demotion to spare drops it;
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
- roles as go-dqlite's leader sets them (app/roles.go), who keeps a copy, the majority rule and
  leave's refusal: microk8s_core/dqlite.py, shared with the L4 fake (one model for
  both). So 2 control-plane nodes are a voter and a spare: losing the spare loses nothing,
  losing the voter loses the quorum;
- without a majority (canonical/microk8s #3735: "If you drop below 2 nodes the cluster will
  freeze"): status prints print_yaml(isReady=False) with `nodes:` empty (get_dqlite_info's
  `dqlite .cluster` fails its 10 tries; it also lists nobody on a node the leader does not list)
  and exits 1; kubectl, enable and disable get the API server's 504, `Error from server
  (Timeout): the server was unable to return a response in the time allotted, but may still be
  processing the request (get nodes)` (apimachinery errors.go NewGenericServerResponse), exit 1;
  add-node still writes its token (add_token.py is local); the agent still answers a
  control-plane join (join.go reads the local cluster.yaml, which needs no quorum) and the
  joiner's update_dqlite waits in vain ("Waiting for this node to finish joining the cluster."
  and ten "..") and exits 0, not a member; a worker's join gets HTTP 500 "failed to retrieve
  list of control plane nodes: failed to list nodes: <the 504>" (join.go's
  ListControlPlaneNodeIPs, pkg/snap/util/kubectl.go); leave and remove-node end in a
  CalledProcessError traceback from their `dqlite .cluster`, exit 1 (remove-node first prints
  "Node <n> does not exist in Kubernetes.", as its failed kubectl makes it). The agent's "failed
  to retrieve dqlite cluster nodes" comes only from reading cluster.yaml (WaitForDqliteCluster),
  so only through the join_dqlite_error fault; `status --wait-ready` waits for a quorum too
  (wait_for_ready polls is_cluster_ready);
- every time a command or an agent finds no majority, a line goes to fake/quorum.log on this node
  and on every other member that answers: `<UTC time> quorum lost: <k>/<n> voters reachable
  (<voters>); on <address>: <command>`. `microk8s fake-quorum` (not a microk8s command) prints
  {"quorum", "cluster", "voters", "reachable", "index"} and exits 0 with a quorum, 1 without
  (recorded like any other finding); the agent's POST /quorum answers the same JSON.

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
  <message> (<status>).` and exit 6; a control-plane joiner gets its role from go-dqlite (below);
  `--worker` joins no dqlite and gets var/lock/clustered.lock;
- the cluster CA: the install makes one of its own (snap/hooks/install calls produce_certs,
  microk8s-resources/actions/common/utils.sh, which writes certs/ca.crt only when missing); the
  agent's join answer carries the CA of its node, and its key for a control-plane joiner only
  (microk8s-cluster-agent pkg/api/v2/join.go JoinResponse ``ca`` from Snap.ReadCA, ``ca_key``
  null for a worker); join.py join_dqlite_master_node stores them as certs/ca.crt and ca.key
  (store_cert, keeping a .backup), after which the apiservice-kicker's ensure_server_ca issues a
  new server.crt from that CA; join_dqlite_worker_node stores the CA as certs/ca.remote.crt
  (store_remote_ca) and keeps its own ca.crt; leave keeps ca.crt (reinit_cluster makes new
  dqlite cluster certificates, not a CA) and a worker's leave removes ca.remote.crt (1.28 and
  1.35 alike);
- remove-node (scripts/wrappers/remove_node.py): by name or any InternalIP, the dqlite member by
  the node's first InternalIP (node_objects.removal_target); a node still in dqlite
  needs --force; a node Kubernetes does not know exits 1, after --force dropped its member; a
  Ready voter removed with --force is allowed (remove_dqlite_node deletes any endpoint found
  with --force, checking no condition) and recorded in fake/voter-removals.log;
- leave (scripts/wrappers/leave.py, 1.28 and 1.35 alike): a worker prints "Configuring
  services." (reset_current_dqlite_worker_installation), every node "Generating new cluster
  certificates." and apply_cni's "Waiting for node to start."; the node goes back to a cluster of
  its own (a new cluster id); the Kubernetes node stays, NotReady, until remove-node. The one
  voter of a cluster with other members cannot leave: three lines, exit 3
  (reset_current_dqlite_installation, is_leader_without_successor); a node alone can;
- kubectl get nodes -o json: a node is Ready while its agent answers, its microk8s runs (not
  restarting) and it belongs to this cluster: its agent's /health reports the cluster id. A
  kubelet posts its node's status to the API server of the cluster it joined (the credentials
  join.py writes, which leave.py's reinit replaces); when the posts stop, the node lifecycle
  controller (kubernetes pkg/controller/nodelifecycle, "Kubelet stopped posting node status.")
  sets Ready to Unknown. So a machine rebuilt at the same address, with a cluster of its own, is
  not Ready in the old cluster until it joins again. Each node also carries
  status.nodeInfo.kubeletVersion (v<version>), status.nodeInfo.bootID while Ready (its machine's
  boot, BOOT_ID below: a new machine under the same name reports another one; the last one
  reported is not kept for a node that is not Ready, where the API server keeps it) and
  spec.unschedulable while cordoned (the API omits it while false: core/v1 NodeSpec, omitempty);
- kubectl get node <n> -o json (one Node), label, taint and annotate <node>: labels (the
  kubelet's and microk8s' own until written), annotations and spec.taints kept with the node in
  the cluster database, a write like cordon's; microk8s_core/node_objects.py
  (shared with the L4 fake) reproduces kubectl and cites it for each behaviour; so is
  `kubectl patch node <n>` of spec.providerID (settable from "" only);
- the OpenStack cloud controller manager's effect on Nodes (microk8s_core/cloud_controller.py,
  shared with the L4 fake): a joiner's Node registers with the uninitialized taint when
  the kubelet arguments it takes from the node joined say --cloud-provider=external; once kubectl
  applied the controller's DaemonSet and the cloud-config Secret, every kubectl first lets it
  initialize the tainted Nodes it finds and delete the NotReady ones whose server is gone, against
  the project's servers the rehearsal's cloud lists on every host (NOVA_SERVERS);
- kubectl apply -f - (the manifest on stdin; --dry-run=server too), get and annotate of objects
  other than Nodes (Secrets, StorageClasses, RBAC, DaemonSets, ...), kept in the cluster database
  under "objects" and written like any other change; microk8s_core/kube_objects.py
  (shared with the L4 fake) reproduces kubectl and cites it. THE RECORD a rehearsal check
  reads: after every change, the node that ran kubectl writes $SNAP_DATA/fake/objects.json
  (/var/snap/microk8s/current/fake/objects.json; Salt applies from the Kubernetes master, so
  that host's), a JSON map "<Kind>/<namespace>/<name>" (the namespace empty for a
  cluster-scoped kind, e.g. "StorageClass//cinder") -> the object as the API server keeps it:
  "Secret/kube-system/cloud-config" has data["cloud.conf"] base64-encoded; `enable
  hostpath-storage` adds the addon's default StorageClass microk8s-hostpath.

- config (microk8s-resources/wrappers/microk8s-config.wrapper): on a --worker node (its
  clustered.lock) "This MicroK8s deployment is acting as a node in a cluster. Please use the
  microk8s config on the master.", exit 0; otherwise credentials/client.config
  (microk8s-resources/client.config.template: cluster microk8s-cluster with the CA's data,
  context microk8s, user admin) with 127.0.0.1 replaced by the address of the interface with the
  default route (utils.sh get_default_ip), then an empty line.

Two releases (canonical/microk8s branches 1.28 and 1.35): `snap install microk8s
--channel=1.NN/<risk>` (no channel: latest/stable, taken as 1.28 as before); what differs follows
the node's release:
- join, on the joiner (scripts/wrappers/join.py, diff 1.28..1.35): 1.35 first checks the
  connection string (common/cluster/utils.py get_valid_connection_parts: "Invalid connection:
  <reason>", exit 1) and ends every successful join with "Successfully joined the cluster.";
  1.28 prints update_dqlite()'s "Waiting for this node to finish joining the cluster." (a
  control-plane joiner) or print_worker_usage() (a worker), and nothing after;
- the agent's refusal of a joiner dqlite already knows (microk8s-cluster-agent): branch 1.28,
  pkg/api/v2/join.go, "the joining node (<ip>) is already known to dqlite", HTTP 504; the agent
  1.35 builds (build-scripts/components/cluster-agent/version.sh; the current agent's
  pkg/snap/util/dqlite.go MaybeUpdateDqliteBindAddress, wrapped by join.go): "failed to retrieve
  dqlite cluster nodes: the joining node (<ip>) is already known to dqlite", HTTP 500;
- status is the same in both (scripts/wrappers/status.py has no diff 1.28..1.35), and so is
  microk8s-kubectl.wrapper on a --worker node: "... Please use the microk8s kubectl on the
  master.", exit 0, before its exit_if_stopped.

Also:
- $SNAP_DATA/args/kubelet: the install hook's copy of default-args (snap/hooks/install), which a
  join replaces with the agent's node's (JoinResponse.KubeletArgs; join.py
  store_base_kubelet_args, worker and control plane alike); `snap restart
  microk8s.daemon-kubelite` (microk8s' restart_service after an argument change) makes the node
  not ready for restart_seconds like a refresh, and prints "Restarted." (snapd cmd_services.go);
- `snap refresh microk8s --channel=X` changes the node's release (with --no-wait it prints the
  change's id, which `snap watch ID` waits for: snapd.py); the services restart, and
  for restart_seconds (faults.json, default 2) the node is not ready: status prints status.py's
  print_yaml(isReady=False) (running: False, high-availability with its nodes, the message) and
  exits 1 (status.py: `if not is_ready: sys.exit(1)`; the API server is not up, so
  is_cluster_ready is false); kubectl cannot reach the API server ("The connection to the server
  127.0.0.1:16443 was refused - did you specify the right host or port?", exit 1: kubectl
  pkg/cmd/util/helpers.go); `snap list microk8s` prints snapd's table (cmd/snap/cmd_list.go
  outputSnapsDefault: Name Version Rev Tracking Publisher Notes), and `snap refresh --hold
  microk8s` holds snapd's own refreshes, shown as "held" in its notes; `microk8s
  fake-auto-refresh` (not a microk8s command) is snapd's auto-refresh: unless held, a new revision
  whose services restart (microk8s_core/snapd.py);
- kubectl cordon/uncordon/drain <node> (kubectl pkg/cmd/drain/drain.go RunCordonOrUncordon,
  RunDrain): "node/<n> cordoned" / "already cordoned" / "uncordoned" / "already uncordoned" /
  "drained"; drain accepts --ignore-daemonsets, --delete-emptydir-data, --timeout=<d>, --force;
  without --ignore-daemonsets it stops at Calico's calico-node pod, a DaemonSet microk8s runs on
  every node (reconcile.d/90-calico-apply; kubectl pkg/drain/filters.go daemonSetFatal), exit
  1; an unknown node is `Error from server (NotFound): nodes "<n>" not found`, exit 1
  (helpers.go standardErrorMessage, apimachinery's NewNotFound);
- the API server's TLS: a control-plane node's agent also listens on 16443 while microk8s runs
  and completes a TLS handshake with certs/server.crt and server.key (kube-apiserver's
  --tls-cert-file, default-args/kube-apiserver), so a client verifies the certificate against
  the cluster CA under any address it names; nothing answers behind the handshake;
- the address each API server advertises: read from $SNAP_DATA/args/kube-apiserver whenever
  kubelite starts (install, start, `snap restart`, refresh): --advertise-address, else the
  default route's address (kube_objects.advertised_address cites kube-apiserver's rule), and
  `kubectl get endpoints kubernetes` (namespace default) lists those of the control-plane nodes
  whose kubelite runs in this cluster, as the lease reconciler keeps them;
- the join fingerprint: add-node's check is microk8s-resources/actions/common/utils.sh
  server_cert_check (sha256 of certs/server.crt in DER, 12 hex characters); join asks the
  agent's /certificate (standing in for the TLS handshake's peer certificate) and compares
  before it posts the join (join.py join_request: "Joining cluster failed. Could not verify the
  identity of <ip>. Use '--skip-verify' to skip server certificate check.", exit 4; the token
  is not spent); `refresh-certs --cert server.crt` (scripts/wrappers/refresh_certs.py
  reproduce_server_cert: refresh_csr_conf; gen_server_cert) renders csr.conf from the template
  again and writes a new certificate naming its IP.n, so the check changes.

Faults a test injects through $SNAP_DATA/fake/faults.json (a JSON object; counts are spent one
use at a time and removed at 0):
- "status_dqlite_empty": N: the node's next N status outputs print `nodes:` with no member while
  high availability is on (common/utils.py get_dqlite_info returns [] once its dqlite query has
  failed its 10 tries);
- "join_dqlite_error": N, with "join_dqlite_error_text" (default "timed out waiting for cluster
  condition: context deadline exceeded", dqlite.go WaitForDqliteCluster): the node's agent
  answers its next N joins, after spending the token and checking the hostname, with HTTP 500
  "failed to retrieve dqlite cluster nodes: <text>" (join.go; a 1.35 agent wraps it twice, as
  MaybeUpdateDqliteBindAddress adds the same prefix);
- "restart_seconds": the not-ready window after a snap refresh or a kubelite restart.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import http.client
import http.server
import ipaddress
import json
import os
import re
import secrets
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

# The core both fakes share, microk8s_core, two folders up: __tests__/doubles in the repository,
# /usr/local/lib/koo-doubles in a host's image, which keeps that layout (install.sh).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from microk8s_core import cloud_controller, dqlite, kube_objects, node_objects, server_cert, snapd

ROOT = Path(os.environ.get("FAKE_MICROK8S_ROOT", "/"))
SNAP_DATA = ROOT / "var/snap/microk8s/current"
SNAP_COMMON = ROOT / "var/snap/microk8s/common"
NODE = SNAP_DATA / "fake/node.json"
CLUSTER = SNAP_DATA / "fake/cluster.json"
TOKENS = SNAP_DATA / "credentials/cluster-tokens.txt"
WORKER_LOCK = SNAP_DATA / "var/lock/clustered.lock"
CSR_TEMPLATE = SNAP_DATA / "certs/csr.conf.template"
AGENT_LOG = SNAP_DATA / "fake/agent.log"
SERVER_CRT = SNAP_DATA / "certs/server.crt"
SERVER_KEY = SNAP_DATA / "certs/server.key"
CA_CRT = SNAP_DATA / "certs/ca.crt"
CA_KEY = SNAP_DATA / "certs/ca.key"
REMOTE_CA = SNAP_DATA / "certs/ca.remote.crt"
KUBELET_ARGS = SNAP_DATA / "args/kubelet"
# The project's Nova servers, as the rehearsal's cloud (cloud.ts) lists them on every host: what
# the modelled cloud controller manager asks (cloud_controller.py).
NOVA_SERVERS = ROOT / "var/lib/koo-rehearsal/nova-servers.json"
# The API server's arguments, which kubelite reads as it starts (kube_objects.py: the defaults,
# and the address the API server advertises from them).
APISERVER_ARGS = SNAP_DATA / "args/kube-apiserver"
# microk8s-resources/default-args/kubelet's first lines, which the install hook copies to
# $SNAP_DATA/args (snap/hooks/install); nothing here reads them.
DEFAULT_KUBELET_ARGS = (
    "--kubeconfig=${SNAP_DATA}/credentials/kubelet.config\n"
    "--cert-dir=${SNAP_DATA}/certs\n"
    "--client-ca-file=${SNAP_DATA}/certs/ca.crt\n"
    "--anonymous-auth=false\n"
    "--fail-swap-on=false\n"
)
# The one service `snap restart` is reproduced for (snapd's app name).
KUBELITE_APP = "microk8s.daemon-kubelite"
FAULTS = SNAP_DATA / "fake/faults.json"
# The machine's boot id. The kubelet reports it as status.nodeInfo.bootID (kubernetes
# pkg/kubelet/nodestatus/setters.go MachineInfo: NodeInfo.BootID is cadvisor's MachineInfo.BootID,
# read from /proc/sys/kernel/random/boot_id, new at every boot). The rehearsal's machines share
# one kernel, so one /proc boot id; each keeps its own in its /run, a tmpfs that every start of
# the machine mounts afresh (doubles/rehearsal/host.ts), so a new machine has a new one.
BOOT_ID = ROOT / "run/fake-microk8s/boot_id"
PORT = int(os.environ.get("FAKE_MICROK8S_PORT", "25000"))
API_PORT = int(os.environ.get("FAKE_MICROK8S_API_PORT", "16443"))
# Tests only: the node's one address (its agent binds it, it is the source of what the node
# sends, kubelet's InternalIP) and its hostname, so that several nodes share one machine.
ADDRESS = os.environ.get("FAKE_MICROK8S_ADDRESS")
SELF = ADDRESS or "127.0.0.1"
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
# microk8s-kubectl.wrapper on a node joined with --worker (1.28 and 1.35 alike): exit 0.
WORKER_KUBECTL = (
    "This MicroK8s deployment is acting as a node in a cluster. Please use the microk8s kubectl on the master."
)
# kubectl pkg/cmd/util/helpers.go standardErrorMessage, for a refused connection (kubelite restarting).
API_DOWN = "The connection to the server 127.0.0.1:16443 was refused - did you specify the right host or port?"
# The patch release a track's channel is taken to carry; other tracks get .0.
PATCH = {28: "1.28.15"}
RISKS = ("stable", "candidate", "beta", "edge")
# common/cluster/utils.py (1.35): the token and fingerprint minimum lengths.
TOKEN_MIN_LEN = 32
FINGERPRINT_MIN_LEN = 12
DQLITE_ERROR = "failed to retrieve dqlite cluster nodes: "
QUORUM_LOG = SNAP_DATA / "fake/quorum.log"
# Held while this node's copy of the database is read and replaced (the agent's threads, commands).
COPY_LOCK = SNAP_DATA / "fake/.cluster.lock"
# How long a write may keep finding another one committed first before the fake gives up.
COMMIT_SECONDS = 60
VOTER_REMOVALS = SNAP_DATA / "fake/voter-removals.log"
VOTER, STANDBY, SPARE, TIMED_OUT = dqlite.VOTER, dqlite.STANDBY, dqlite.SPARE, dqlite.TIMED_OUT


def read(path: Path, default):
    return json.loads(path.read_text()) if path.exists() else default


def write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def node() -> dict:
    defaults = {"installed": False, "running": False, "agent": None, "channel": None, "cluster_id": None}
    return {**defaults, "restart_until": 0, **read(NODE, {})}


def release(channel: str | None) -> int | None:
    """The minor version a channel 1.NN/<risk> tracks; None for any other (latest/...)."""
    match = re.fullmatch(r"1\.(\d+)/(\w+)", channel or "")
    return int(match.group(1)) if match and match.group(2) in RISKS else None


def minor(state: dict) -> int:
    return release(state["channel"]) or 28


def version(state: dict) -> str:
    return PATCH.get(minor(state), f"1.{minor(state)}.0")


def restarting(state: dict) -> bool:
    return time.time() < state["restart_until"]


def fault(name: str) -> dict | None:
    """Spends one use of fault ``name`` (fake/faults.json); the faults, or None when it is not set."""
    FAULTS.parent.mkdir(parents=True, exist_ok=True)
    with (SNAP_DATA / "fake/.faults.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        faults = read(FAULTS, {})
        if int(faults.get(name, 0)) <= 0:
            return None
        faults[name] = int(faults[name]) - 1
        if faults[name] == 0:
            del faults[name]
        write(FAULTS, faults)
    return faults


def new_server_certificate() -> None:
    """gen_server_cert, from csr.conf (server_cert.py)."""
    SERVER_CRT.parent.mkdir(parents=True, exist_ok=True)
    server_cert.gen_server_cert(SNAP_DATA, addresses())


def store_cert(path: Path, payload: str) -> None:
    """join.py store_cert: the file kept as <name>.backup, then the payload written."""
    if path.exists():
        path.with_name(f"{path.name}.backup").write_text(path.read_text())
    path.write_text(payload)


def der(pem: str) -> bytes:
    """ssl.PEM_cert_to_DER_cert, for the fake's certificates."""
    inner = pem.split("-----BEGIN CERTIFICATE-----")[1].split("-----END CERTIFICATE-----")[0]
    return base64.decodebytes(inner.encode())


def server_cert_check() -> str:
    """utils.sh server_cert_check: sha256 of server.crt in DER, its first 12 hex characters."""
    return hashlib.sha256(der(SERVER_CRT.read_text())).hexdigest()[:12]


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
    source = (ADDRESS, 0) if ADDRESS else None
    connection = http.client.HTTPConnection(address, PORT, timeout=timeout, source_address=source)
    try:
        connection.request("POST", path, json.dumps(body or {}), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


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
        if self.path == "/join":
            with LOCK:
                status, answer = self.handle_path(self.path, body)
        else:
            status, answer = self.handle_path(self.path, body)
        self.reply(status, answer)

    def handle_path(self, path: str, body: dict) -> tuple[int, dict]:
        state = node()
        if path == "/health":
            # What the node's kubelet would tell its API server: up, which cluster, which version,
            # which boot of its machine.
            return 200, {
                "running": state["running"],
                "restarting": restarting(state),
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
        # The agent's release is its node's: branch 1.28's join.go, or the current agent, whose
        # MaybeUpdateDqliteBindAddress wraps its errors in DQLITE_ERROR once more.
        current_agent = minor(node()) >= 29
        faults = fault("join_dqlite_error")
        if faults is not None:
            text = faults.get(
                "join_dqlite_error_text", "timed out waiting for cluster condition: context deadline exceeded"
            )
            return 500, {"error": DQLITE_ERROR * (2 if current_agent else 1) + text}
        state = node()
        # GetDqliteCluster reads this node's cluster.yaml: the last configuration its dqlite
        # knew, which needs no quorum (a spare, holding no copy, knows the freshest reachable).
        known = local_copy(state) or quorum(state)["db"] or {"members": []}
        local = self.connection.getsockname()[0]
        # A lone member still on 127.0.0.1 is this node (the fake's tests join from 127.0.0.1).
        if any(host_of(m) == joiner for m in alone(known, local)["members"]):
            known_text = f"the joining node ({joiner}) is already known to dqlite"
            return (500, {"error": DQLITE_ERROR + known_text}) if current_agent else (504, {"error": known_text})
        copy = local_copy(state)
        if copy and [m["address"] for m in copy["members"]] == [f"127.0.0.1:{DQLITE_PORT}"]:
            # join.go (UpdateDqliteIP): the first join moves dqlite from 127.0.0.1 to the address
            # the joiner used; the node alone, its own majority, reconfigures itself.
            copy["members"][0]["address"] = f"{local}:{DQLITE_PORT}"
            copy["index"] += 1
            write(CLUSTER, copy)
        entry = {"name": name, "address": joiner, "version": body.get("version")}
        # The joiner's kubelet starts with this node's arguments (below): with
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
            # join.go (worker): ListControlPlaneNodeIPs lists the nodes through the API server.
            if not commit(state, register_node, command + " (--worker)"):
                error = f"failed to retrieve list of control plane nodes: failed to list nodes: {TIMED_OUT} (get nodes)"
                return 500, {"error": error}
            # join.go: the CA this node reads (Snap.ReadCA); no key for a worker.
            return 200, {
                "agent": local,
                "cluster": state["cluster_id"],
                "copy": None,
                "ca": CA_CRT.read_text(),
                "ca_key": None,
                # JoinResponse.KubeletArgs: this node's kubelet arguments, for the joiner.
                "kubelet_args": kubelet_args(),
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
            # join.go: the CA this node reads (Snap.ReadCA) and, for a control-plane joiner, its key.
            "ca": CA_CRT.read_text(),
            "ca_key": CA_KEY.read_text(),
            "kubelet_args": kubelet_args(),
        }


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
    threading.Thread(target=serve_api, daemon=True).start()
    server = http.server.ThreadingHTTPServer((ADDRESS or "0.0.0.0", PORT), Agent)
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
        if is_worker() or not state["running"] or restarting(state):
            return
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


# --- the CLI ------------------------------------------------------------------------------------


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


def is_worker() -> bool:
    return WORKER_LOCK.exists()


def status(state: dict, args: list[str]) -> int:
    if "--wait-ready" in args:
        timeout = int(args[args.index("--timeout") + 1]) if "--timeout" in args else 0
        deadline = time.time() + timeout
        # wait_for_ready: until is_cluster_ready, which needs the API server and its datastore.
        while not node()["running"] or restarting(node()) or not quorum(node())["quorum"]:
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
    data = read_db(state)
    # is_cluster_ready: kubectl get all / get nodes, which fail without the datastore.
    ready = not restarting(state) and data is not None
    # status.py print_yaml, column for column (Python's True/False included). "enabled" is
    # common/utils.py is_ha_enabled(): the ha-cluster addon, not whether 3 voters formed (its
    # lock file is local: the last copy this node saw tells it); the members are listed
    # whenever it is on (get_dqlite_info).
    known = data or local_copy(state) or {"addons": {"ha-cluster": "enabled"}}
    ha_enabled = known["addons"].get("ha-cluster") == "enabled"
    print(f"microk8s:\n  running: {ready}\nhigh-availability:\n  enabled: {ha_enabled}")
    if ha_enabled:
        print("  nodes:")
        # get_dqlite_info: [] when its dqlite query (answered by the leader) failed its 10 tries:
        # no quorum, the fault, or a node whose own address the leader does not list.
        members = (data or {}).get("members", [])
        if not any(m["address"] == f"127.0.0.1:{DQLITE_PORT}" or host_of(m) in own_hosts() for m in members):
            members = []
        for member in members if fault("status_dqlite_empty") is None else []:
            print(f"    - address: {member['address']}\n      role: {member['role']}")
    if not ready:
        # Restarting after a refresh, or no quorum: print_yaml(isReady=False), then status.py exits 1.
        print(f"  message: {NOT_RUNNING}")
        return 1
    print("addons:")
    for wanted in ("enabled", "disabled"):
        for name, addon_status in sorted(data["addons"].items()):
            if addon_status == wanted:
                print(
                    f"  - name: {name}\n    repository: core\n    description: {name}\n"
                    f"    version: {version(state)}\n    status: {wanted}"
                )
    return 0


def addon(state: dict, command: str, args: list[str]) -> int:
    if is_worker():
        print(WORKER_LOCKED)
        return 1
    data = read_db(state)
    if data is None:
        # enable.py's kubectl calls get the API server's 504.
        print(f"Error from server (Timeout): {TIMED_OUT}", file=sys.stderr)
        return 1
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
        print(f"Error from server (Timeout): {TIMED_OUT}", file=sys.stderr)
        return 1
    return 0


def add_node(state: dict, args: list[str]) -> int:
    ttl = int(args[args.index("--token-ttl") + 1]) if "--token-ttl" in args else -1
    token = args[args.index("--token") + 1] if "--token" in args else secrets.token_hex(16)
    TOKENS.parent.mkdir(parents=True, exist_ok=True)
    with TOKENS.open("a") as tokens:
        tokens.write(f"{token}|{int(time.time()) + ttl}\n" if ttl != -1 else f"{token}\n")
    check = server_cert_check()
    urls = [f"{address}:{PORT}/{token}/{check}" for address in addresses()]
    if "--format" in args and args[args.index("--format") + 1] == "json":
        print(json.dumps({"token": f"{token}/{check}", "urls": urls}))
    else:
        print("From the node you wish to join to this cluster, run the following:")
        print(f"microk8s join {urls[0]}")
    return 0


def invalid_connection(connection: str) -> str | None:
    """common/cluster/utils.py get_valid_connection_parts (1.35): the reason, or None when valid."""
    parts = connection.split("/")
    expected = "Expected format: <master_IP>:<master_PORT>/<token>[/<fingerprint>]"
    if len(parts) not in (2, 3) or len(parts[0].split(":")) != 2:
        return expected
    host, port = parts[0].split(":")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return "Invalid master IP"
    if not port.lstrip("-").isdigit():
        return "Master PORT not a number"
    if not 1 <= int(port) <= 65535:
        return "Master PORT not in range 1:65535"
    if len(parts[1]) < TOKEN_MIN_LEN:
        return f"Cluster token size should be at least {TOKEN_MIN_LEN} bytes"
    if len(parts) == 3 and len(parts[2]) < FINGERPRINT_MIN_LEN:
        return f"Fingerprint should be at least {FINGERPRINT_MIN_LEN} bytes"
    return None


def verified(address: str, fingerprint: str) -> int:
    """join.py join_request, before the join is posted: 0, or its exit code 4."""
    skip = " Use '--skip-verify' to skip server certificate check."
    if len(fingerprint) < FINGERPRINT_MIN_LEN:
        print(f"Joining cluster failed. Fingerprint too short.{skip}")
        return 4
    status_code, answer = request(address, "/certificate", timeout=30)
    pem = answer.get("pem") if status_code == 200 else None
    if pem and not hashlib.sha256(der(pem)).hexdigest().startswith(fingerprint):
        print(f"Joining cluster failed. Could not verify the identity of {address}.{skip}")
        return 4
    return 0


def join(state: dict, args: list[str]) -> int:
    connection = args[0]
    if minor(state) >= 35:
        reason = invalid_connection(connection)
        if reason:
            print("Invalid connection:", reason)
            return 1
    parts = connection.split("/")
    address, token = parts[0].split(":", 1)[0], parts[1]
    worker = "--worker" in args
    print(f"Contacting cluster at {address}")
    # join_dqlite: without a fingerprint nothing is verified; --skip-verify skips it.
    if len(parts) > 2 and "--skip-verify" not in args:
        code = verified(address, parts[2])
        if code:
            return code
    # join.py get_connection_info: only HTTPException is caught; a refused connection is a traceback.
    body = {"token": token, "hostname": hostname(), "worker": worker, "version": version(state)}
    status_code, answer = request(address, "/join", body, timeout=30)
    if status_code != 200:
        print(f"Connection failed. {answer.get('error')} ({status_code}).")
        return 6
    state.update(agent=address, cluster_id=answer.get("cluster"), peers=[address])
    # A join resets the node to the cluster's: its own database and addons are gone; a voter
    # or stand-by gets the cluster's copy (the leader's replication), a spare or worker none.
    CLUSTER.unlink(missing_ok=True)
    if answer.get("copy"):
        write(CLUSTER, answer["copy"])
    # join_dqlite_worker_node and join_dqlite_master_node alike: store_base_kubelet_args writes
    # the agent's node's kubelet arguments over this node's own.
    if answer.get("kubelet_args") is not None:
        KUBELET_ARGS.parent.mkdir(parents=True, exist_ok=True)
        KUBELET_ARGS.write_text(answer["kubelet_args"])
    if worker:
        # join_dqlite_worker_node: store_remote_ca; the worker's own ca.crt stays.
        REMOTE_CA.write_text(answer["ca"])
        WORKER_LOCK.parent.mkdir(parents=True, exist_ok=True)
        WORKER_LOCK.touch()
        # print_worker_usage, in 1.28 and 1.35 alike.
        print("\nThe node has joined the cluster and will appear in the nodes list in a few seconds.\n")
        print("This worker node gets automatically configured with the API server endpoints.")
        print("If the API servers are behind a loadbalancer please set the '--refresh-interval' to '0s' in:")
        print("    /var/snap/microk8s/current/args/apiserver-proxy")
        print("and replace the API server endpoints with the one provided by the loadbalancer in:")
        print("    /var/snap/microk8s/current/args/traefik/provider.yaml\n")
    elif answer.get("stalled"):
        # update_dqlite without a quorum: its ten `dqlite .cluster` tries fail (".." each), then
        # print(" "); join.py carries on and exits 0, the node not a member.
        print("Waiting for this node to finish joining the cluster. " + ".. " * 10 + " ")
    else:
        # join_dqlite_master_node: store_cert ca.crt and ca.key; the apiservice-kicker's
        # ensure_server_ca then finds server.crt not issued by that CA and issues a new one.
        store_cert(CA_CRT, answer["ca"])
        store_cert(CA_KEY, answer["ca_key"])
        new_server_certificate()
        # update_dqlite: the wait for dqlite (end=" "), then print(" ").
        print("Waiting for this node to finish joining the cluster.  ")
    if minor(state) >= 35:
        print("Successfully joined the cluster.")
    write(NODE, state)
    return 0


def leave(state: dict) -> int:
    worker = is_worker()
    if not worker:
        data = read_db(state)
        if data is None:
            # is_leader_without_successor's `dqlite .cluster` needs the leader: check_output raises.
            return dqlite_traceback()
        # 127.0.0.1 is this node only while dqlite was never moved off it (alone); in a formed
        # cluster it is another member's address (the tests' nodes share the loopback network).
        members = alone(data, SELF)["members"]
        others = [m for m in members if host_of(m) not in own_hosts()]
        if dqlite.leader_without_successor(members, own_hosts()):
            # leave.py is_leader_without_successor: the one voter, with other members (dqlite.py).
            print("This node currently holds the only copy of the Kubernetes database so it cannot leave the cluster.")
            print("To remove this node you can either first remove all other nodes with 'microk8s remove-node' or")
            print("form a highly available cluster by adding at least three nodes.")
            return 3
        data["members"] = others
        update(state, data)
    else:
        print("Configuring services.")
        # reset_current_dqlite_worker_installation: os.remove(ca_cert_file), the ca.remote.crt.
        REMOTE_CA.unlink(missing_ok=True)
    # reinit_cluster: new dqlite cluster certificates (ca.crt stays), a cluster of its own.
    state.update(agent=None, cluster_id=secrets.token_hex(8), peers=[])
    WORKER_LOCK.unlink(missing_ok=True)
    start_own_cluster(state)
    write(NODE, state)
    print("Generating new cluster certificates.\nWaiting for node to start.  ")
    return 0


def remove_node(state: dict, args: list[str]) -> int:
    if is_worker():
        print(WORKER_LOCKED)
        return 1
    target, force = args[0], "--force" in args
    data = read_db(state)
    if data is None:
        # kubectl get no fails (CalledProcessError): "does not exist in Kubernetes"; with --force
        # get_dqlite_endpoints' dqlite query then fails too.
        print(f"Node {target} does not exist in Kubernetes.")
        if force:
            print(f"Attempting to remove {target} from dqlite.")
            return dqlite_traceback()
        return 1
    found, address = node_objects.removal_target(data["nodes"], target)
    member = f"{address}:{DQLITE_PORT}"
    in_dqlite = any(m["address"] == member for m in data["members"])
    if found and in_dqlite and not force:
        print(
            f"Removal failed. Node {target} is registered with dqlite. "
            "Please, run first 'microk8s leave' on the departing node."
        )
        return 1
    voter = any(m["address"] == member and m["role"] == VOTER for m in data["members"])
    healthy_voter = force and voter and node_ready(state, health(address))
    if force:
        data["members"] = [m for m in data["members"] if m["address"] != member]
    data["nodes"] = [n for n in data["nodes"] if n is not found]
    if not update(state, data):
        return dqlite_traceback()
    if healthy_voter:
        # remove_node.py refuses nothing here (--force drops any member), so the fake does not
        # either: it records the removal of a voter still Ready, which a test asserts never happens.
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        with VOTER_REMOVALS.open("a") as log:
            log.write(f"{stamp} a Ready voter removed: {target} ({member}); on {SELF}: {command_line()}\n")
    if not found:
        print(f"Node {target} does not exist in Kubernetes.")
        if force and in_dqlite:
            print(f"Attempting to remove {target} from dqlite.\nRemoving node entry found in dqlite.")
        return 1
    return 0


def dqlite_traceback() -> int:
    """leave.py / remove_node.py: `dqlite .cluster` fails without a leader, and check_output raises."""
    print(dqlite.NO_LEADER_TRACEBACK, file=sys.stderr)
    return 1


def api_unavailable(args: list[str]) -> int:
    """kubectl when the API server's datastore does not answer: a 504 from the API server."""
    print(dqlite.timed_out(args, operands(args[1:])), file=sys.stderr)
    return 1


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


def node_item(state: dict, data: dict, entry: dict) -> dict:
    """One Node as the API server returns it: Ready by the node's agent, labels, annotations, taints."""
    answer = health(entry["address"])
    is_ready = node_ready(state, answer)
    # The kubelet reports its version and boot id with its status; the last version reported stays
    # otherwise (the fake keeps no boot id for a node that is not Ready: it reports none).
    kubelet_version = answer["version"] if is_ready else entry.get("version") or "1.28.15"
    boot = answer.get("boot_id", "") if is_ready else ""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": node_objects.metadata(entry),
        "spec": node_objects.spec(entry),
        "status": {
            "addresses": node_objects.status_addresses(entry),
            "conditions": [{"type": "Ready", "status": "True" if is_ready else "Unknown"}],
            "nodeInfo": {"kubeletVersion": f"v{kubelet_version}", "bootID": boot},
        },
    }


def kubectl_nodes(state: dict, data: dict) -> int:
    items = []
    for entry in data["nodes"]:
        item = node_item(state, data, entry)
        del item["apiVersion"], item["kind"]
        items.append(item)
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return 0


def kubectl_node(state: dict, data: dict, name: str) -> int:
    """kubectl get node NAME -o json: the Node object, or NotFound."""
    found = next((n for n in data["nodes"] if n["name"] == name), None)
    if found is None:
        code, _, err, _ = node_objects.not_found(name)
        print(err, end="", file=sys.stderr)
        return code
    print(json.dumps(node_item(state, data, found)))
    return 0


def kubectl_metadata(state: dict, data: dict, verb: str, args: list[str]) -> int:
    """kubectl label / taint / annotate on one node (node_objects.py), written through the database's leader."""
    names = operands(args)
    name = names[1] if names[:1] and names[0] in ("node", "nodes", "no") and len(names) > 1 else None
    if names[:1] and "/" in names[0]:
        name = names[0].split("/", 1)[1]
    found = next((n for n in data["nodes"] if n["name"] == name), None)
    if verb == "label":
        code, out, err, changed = node_objects.label(found, args)
    elif verb == "taint":
        code, out, err, changed = node_objects.taint(found, args)
    else:
        code, out, err, changed = node_objects.annotate(found, args)
    if changed and not update(state, data):
        return api_unavailable([verb, name or ""])
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


def kubectl_schedule(state: dict, data: dict, verb: str, args: list[str]) -> int:
    """kubectl cordon / uncordon / drain <node> (drain.go RunCordonOrUncordon, RunDrain)."""
    names = operands(args)
    found = next((n for n in data["nodes"] if names and n["name"] == names[0]), None)
    if found is None:
        print(f'Error from server (NotFound): nodes "{names[0] if names else ""}" not found', file=sys.stderr)
        return 1
    name, desired = found["name"], verb != "uncordon"
    already = bool(found.get("unschedulable")) == desired
    found["unschedulable"] = desired
    if not update(state, data):
        return api_unavailable([verb, name])
    print(f"node/{name} {'already ' if already else ''}{'cordoned' if desired else 'uncordoned'}")
    if verb != "drain":
        return 0
    objects = data.setdefault("objects", {})
    code, out, err, changed = node_objects.drain_pods(objects, name, args, calico_pod(name))
    if changed:
        if not update(state, data):
            return api_unavailable([verb, name])
        kube_objects.record(SNAP_DATA, objects)
    print(out, end="")
    print(err, end="", file=sys.stderr)
    return code


def kubectl(state: dict, args: list[str]) -> int:
    """microk8s-kubectl.wrapper: a worker's message (exit 0), exit_if_stopped, then kubectl."""
    if is_worker():
        print(WORKER_KUBECTL)
        return 0
    if not state["running"]:
        print(STOPPED, file=sys.stderr)
        return 1
    if restarting(state):
        print(API_DOWN, file=sys.stderr)
        return 1
    verbs = (["cordon"], ["uncordon"], ["drain"], ["label"], ["taint"], ["annotate"], ["apply"], ["get"], ["patch"])
    if args[:1] not in verbs:
        print(f"fake microk8s: kubectl {' '.join(args)} is not reproduced", file=sys.stderr)
        return 2
    # The manifest kubectl apply reads from stdin, read before the database (a 504 would not read it).
    manifest = sys.stdin.read() if args[:1] == ["apply"] else None
    data = read_db(state)
    if data is None:
        return api_unavailable(args)
    # The cloud controller manager's work since the last command (cloud_controller.py), against
    # the servers the rehearsal's cloud lists on every host.
    listing = cloud_controller.servers(NOVA_SERVERS)
    ready = lambda entry: node_ready(state, health(entry["address"]))  # noqa: E731
    if cloud_controller.reconcile(data["nodes"], data.get("objects", {}), listing, ready):
        if not update(state, data):
            return api_unavailable(args)
        AS_READ.clear()
        AS_READ.update(json.loads(json.dumps(data)))
    nodes = node_word(args[1:])
    if args[:1] == ["get"] and nodes and len(operands(args)) == 3:
        return kubectl_node(state, data, operands(args)[2])
    if args[:1] == ["get"] and nodes:
        return kubectl_nodes(state, data)
    if args[:1] in (["label"], ["taint"]) or (args[:1] == ["annotate"] and nodes):
        return kubectl_metadata(state, data, args[0], args[1:])
    if args[:1] == ["patch"] and nodes:
        return kubectl_patch(state, data, args[1:])
    if args[:1] in (["apply"], ["get"], ["annotate"]):
        return kubectl_objects(state, data, args[0], args[1:], manifest)
    if args[:1] == ["patch"]:
        print(f"fake microk8s: kubectl {' '.join(args)} is not reproduced", file=sys.stderr)
        return 2
    return kubectl_schedule(state, data, args[0], args[1:])


def node_word(args: list[str]) -> bool:
    """Whether kubectl's first operand names Nodes (node, nodes, no, node/NAME)."""
    names = operands(args)
    return bool(names) and names[0].split("/", 1)[0] in ("node", "nodes", "no")


def kubectl_patch(state: dict, data: dict, args: list[str]) -> int:
    """kubectl patch node NAME (spec.providerID, node_objects.patch), written through the database's leader."""
    name = node_objects.patched_node(args)
    found = next((n for n in data["nodes"] if n["name"] == name), None)
    code, out, err, changed = node_objects.patch(found, args)
    if changed and not update(state, data):
        return api_unavailable(["patch", name or ""])
    print(out, end="")
    print(err, end="", file=sys.stderr)
    return code


def kubectl_objects(state: dict, data: dict, verb: str, args: list[str], manifest: str | None) -> int:
    """
    kubectl apply -f - (``manifest``, from stdin), get and annotate of objects other than Nodes
    (kube_objects.py), kept in the cluster database under "objects" and written through its
    leader; after every change this node writes the record, fake/objects.json.
    """
    objects = data.setdefault("objects", {})
    if verb == "apply":
        if args[:2] != ["-f", "-"] or any(a not in ("-f", "-", "--dry-run=server") for a in args):
            print(f"fake microk8s: kubectl apply {' '.join(args)} is not reproduced", file=sys.stderr)
            return 2
        code, out, err, changed = kube_objects.apply(objects, manifest or "", "--dry-run=server" in args)
    elif verb == "get":
        names = operands(args)
        if names and kube_objects.kind_of(names[0]) == "Endpoints":
            # default/kubernetes: the API servers' endpoint reconciler's, which no client writes.
            endpoints = kube_objects.kubernetes_endpoints(api_servers(state, data))
            objects = {**objects, kube_objects.key(endpoints): endpoints}
        code, out, err, changed = kube_objects.get(objects, args)
    else:
        code, out, err, changed = kube_objects.annotate(objects, args)
    if changed:
        if not update(state, data):
            return api_unavailable([verb, ""])
        kube_objects.record(SNAP_DATA, objects)
    print(out, end="")
    print(err, end="", file=sys.stderr)
    return code


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


def refresh_certs(args: list[str]) -> int:
    """refresh_certs.py --cert: a backup, new certificates, the services restarted."""
    cert = args[args.index("--cert") + 1] if "--cert" in args else None
    if cert is None:
        print("Please use the '--cert' flag to select the certificate you need refreshed.")
        return 3
    print("Taking a backup of the current certificates under /var/snap/microk8s/7000/certs-backup/")
    print("Creating new certificates")
    if cert == "server.crt":
        # reproduce_server_cert: refresh_csr_conf; gen_server_cert (the template's IP.n as they are now).
        server_cert.refresh_csr_conf(SNAP_DATA, addresses())
        new_server_certificate()
        print("Restarting service kubelite.\nRestarting service cluster-agent.")
    return 0


def unknown_channel(channel: str | None) -> bool:
    """Only 1.NN/<risk> (and latest/..., taken as 1.28) are reproduced; anything else is refused."""
    if channel is None or release(channel) is not None or channel.startswith("latest/"):
        return False
    print(f"fake snap: channel {channel} is not reproduced (only 1.NN/<risk> and latest/...)", file=sys.stderr)
    return True


def snap(args: list[str]) -> int:
    state = node()
    channel = next((a.split("=", 1)[1] for a in args if a.startswith("--channel=")), None)
    if args[:2] == ["list", "microk8s"]:
        if not state["installed"]:
            print("error: no matching snaps installed", file=sys.stderr)
            return 1
        row = f"v{version(state)}  {snapd.revision(state)}  {state['channel']}  canonical✓  {snapd.notes(state)}"
        print(f"Name      Version   Rev   Tracking       Publisher   Notes\nmicrok8s  {row}")
        return 0
    if snapd.is_hold_command(args):
        if not state["installed"]:
            print('error: snap "microk8s" is not installed', file=sys.stderr)
            return 1
        code, out, err = snapd.hold(state, args)
        write(NODE, state)
        print(out, end="")
        print(err, end="", file=sys.stderr)
        return code
    if args[:2] == ["install", "microk8s"]:
        if state["installed"]:
            print('snap "microk8s" is already installed')
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
        KUBELET_ARGS.write_text(DEFAULT_KUBELET_ARGS)
        APISERVER_ARGS.write_text(kube_objects.DEFAULT_APISERVER_ARGS)
        kubelite_started(state)
        CSR_TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
        CSR_TEMPLATE.write_text("[ alt_names ]\nDNS.1 = kubernetes\nIP.1 = 127.0.0.1\nIP.2 = 10.152.183.1\n#MOREIPS\n")
        # produce_certs: a CA of this install's own, written only when there is none; csr.conf
        # rendered from the template, and server.crt from it.
        server_cert.produce_ca(SNAP_DATA)
        server_cert.refresh_csr_conf(SNAP_DATA, addresses())
        new_server_certificate()
        start_own_cluster(state)
        write(NODE, state)
        start_agent()
        print(f"microk8s ({state['channel']}) v{version(state)} from Canonical✓ installed")
        return 0
    if args[:1] == ["restart"]:
        # snapd cmd/snap/cmd_services.go: waits for the change, prints "Restarted.". kubelite
        # starts again, reading its arguments files: not ready for restart_seconds, as after a
        # refresh (microk8s' restart_service runs this after an argument change).
        if args[1:] != [KUBELITE_APP]:
            print(f"fake snap: restart {' '.join(args[1:])} is not reproduced", file=sys.stderr)
            return 2
        state.update(restart_until=time.time() + float(read(FAULTS, {}).get("restart_seconds", 2)))
        kubelite_started(state)
        write(NODE, state)
        print("Restarted.")
        return 0
    if args[:1] == ["watch"]:
        code, out, err = snapd.watch(state, args)
        print(out, end="")
        print(err, end="", file=sys.stderr)
        return code
    no_wait = "--no-wait" in args
    args = [a for a in args if a != "--no-wait"]
    if args[:2] == ["refresh", "microk8s"]:
        if not state["installed"]:
            print('error: snap "microk8s" is not installed', file=sys.stderr)
            return 1
        if channel is None or channel == state["channel"]:
            print('snap "microk8s" has no updates available')
            return 0
        if unknown_channel(channel):
            return 2
        change = snapd.start_change(state, "refresh-snap", snapd.refresh_summary(channel))
        # The new revision's services start over: not ready for restart_seconds.
        state.update(channel=channel, restart_until=time.time() + float(read(FAULTS, {}).get("restart_seconds", 2)))
        kubelite_started(state)
        write(NODE, state)
        data = read_db(state) if state["running"] else None
        if data is not None:
            # The kubelet's next status post carries the new version (when the API server can take it).
            for entry in data["nodes"]:
                if entry["address"] in addresses() or entry["name"] == hostname():
                    entry["version"] = version(state)
            update(state, data)
        print(change if no_wait else f"microk8s ({channel}) v{version(state)} from Canonical✓ refreshed")
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
        return 0 if node()["running"] and not restarting(node()) and agent_up(SELF) else 3
    state = node()
    if not state["installed"]:
        print("microk8s: command not found", file=sys.stderr)
        return 127
    command, rest = (args[0], args[1:]) if args else ("", [])
    if command == "status":
        return status(state, rest)
    if command in ("start", "stop"):
        state["running"] = command == "start"
        if state["running"]:
            kubelite_started(state)
        write(NODE, state)
        if command == "start":
            start_agent()
        return 0
    if command == "refresh-certs":
        return refresh_certs(rest)
    if command == "fake-quorum":
        return quorum_query(state)
    if command == "fake-auto-refresh":
        # Not a microk8s command: snapd's auto-refresh of the snap, unless held (snapd.py).
        if snapd.auto_refresh(state, float(read(FAULTS, {}).get("restart_seconds", 2))):
            write(NODE, state)
        return 0
    if command == "kubectl":
        return kubectl(state, rest)
    if command == "config":
        return client_config()
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
    }
    if command not in handlers:
        print(f"fake microk8s: unsupported {args}", file=sys.stderr)
        return 2
    return handlers[command]()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
