#!/usr/bin/env python3
"""
A fake ``microk8s`` CLI for the tests that run the real Salt loader. What it answers, and the
microk8s, snapd, dqlite and kubectl source each answer follows, is the core it shares with the
rehearsal's fake (__tests__/doubles/microk8s_core: status.py, tokens.py, join.py, leave.py,
remove_node.py, kubectl.py, node_objects.py, kube_objects.py, cloud_controller.py, dqlite.py,
server_cert.py, snapd.py, releases.py, faults.py; __tests__/l4-salt/fixtures/microk8s/README.md
for the output shapes); this file keeps the nodes' state and how they reach each other.

Each fake node keeps its $SNAP_DATA in $FAKE_MICROK8S_DIR, with the files microk8s itself keeps
there (layout.py) plus a state.json for what a real node keeps in its services (running, the
channel, the id of the cluster it belongs to, its boot id). Nodes find each other by address
through $FAKE_MICROK8S_CLUSTER, a directory of links named after each node's address: nothing
goes over a network. Each cluster's database (its dqlite members, Kubernetes nodes and other
objects) is $FAKE_MICROK8S_CLUSTER/.dqlite/<cluster id>.json, which stands in for dqlite's copies
on every voter and stand-by: it outlives any one node, so a rebuilt master (a fresh $SNAP_DATA at
its address) finds the cluster the voters kept, but only a majority of the voters can read or
write it (dqlite.py, one model for both fakes: 2 control-plane nodes are a voter and a spare, 3
are 3 voters, a fourth a stand-by). A member answers while its microk8s runs in the database's
cluster (a rebuilt machine runs one of its own); restarting after a refresh, it still answers,
as in the rehearsal's fake. Without a majority of the voters answering: status lists no member
and exits 1 (`--wait-ready` waits), kubectl, enable and disable get the API server's 504, a
worker's join gets HTTP 500, a control-plane join waits in vain and exits 0, not a member, and
leave and remove-node end in a CalledProcessError traceback (join.py, leave.py, remove_node.py,
kubectl.py).

What this fake does its own way:
- a node is $FAKE_MICROK8S_ADDRESS and $FAKE_MICROK8S_HOSTNAME; its Node's InternalIPs are
  $FAKE_MICROK8S_NODE_IPS (comma-separated, in the order its status lists them; the address alone
  otherwise), so given one whose status lists another address first, remove-node --force
  deletes the Kubernetes node, exits 0 and leaves the member in dqlite
  (node_objects.removal_target); it tracks $FAKE_MICROK8S_CHANNEL when it is created (else
  1.28/stable), and `snap install microk8s --channel=...` (through a link named ``snap``)
  refuses any channel but 1.NN/<risk>;
- the agent of the node joined is this program too, run by the joiner under that node's lock:
  the master's certificate, read from its $SNAP_DATA, stands in for the TLS handshake's;
  $FAKE_MICROK8S_DIR/etc-hosts of the master, when present, stands in for its /etc/hosts (the
  hostname check); an unreachable master ends in a ConnectionRefusedError;
- status: a stopped node prints print_yaml(isReady=False) without high availability and exits 0;
  the addons are the node's own, in their order, without a repository; add-node prints its JSON
  whatever the format asked;
- kubectl get nodes -o json: a node is Ready while its microk8s runs (not restarting) and it
  belongs to this cluster (see ready); a stopped node's kubectl is refused (the API server is
  down);
- the OpenStack cloud controller manager (cloud_controller.py) asks
  $FAKE_MICROK8S_CLUSTER/.nova/servers.json for the project's servers;
- the record of every object kubectl applied (kube_objects.record) is
  $FAKE_MICROK8S_DIR/fake/objects.json; every command goes to $FAKE_MICROK8S_DIR/calls.log.

Faults a test injects through $FAKE_MICROK8S_DIR/fake/faults.json (faults.py):
- ``status_dqlite_empty``: N: the next N status outputs print `nodes:` with no member while
  high availability is on: common/utils.py get_dqlite_info returns [] when its dqlite query keeps
  failing for its 10 tries;
- ``join_dqlite_error``: N (and ``join_dqlite_error_text``): this node's agent answers the next N
  joins, after spending the token and checking the hostname, with HTTP 500 (join.py);
- ``restart_seconds``: the not-ready window after a snap refresh, a boot or a kubelite restart;
- ``auto_refresh_in_progress``: N: the next N `snap refresh microk8s ...` fail as snapd refuses a
  change to a snap while another runs (snapd.refused), exit 1; `snap watch --last=auto-refresh`
  then finds that change done;
- ``refresh_fails``: N: the next N refreshes to another channel fail in their change (the new
  revision's services do not start) and are undone: the snap keeps its channel (snapd.py);
- ``not_ready``: while set, a running node's kubelet posts it not Ready (its Ready condition False).

Not microk8s commands: ``microk8s fake-auto-refresh`` is snapd's auto-refresh (snapd.py), and
``microk8s fake-boot``, for the harness's ``systemctl reboot`` (__tests__/harness/fake_systemctl.py),
the machine's boot: the node gets a new boot id, which kubectl reports as status.nodeInfo.bootID
while the node is Ready (core/v1 NodeSystemInfo.BootID: the kubelet reads
/proc/sys/kernel/random/boot_id, new at every boot), and its services start, not ready for
``restart_seconds`` (the snap's daemons start with the machine).
"""

import contextlib
import fcntl
import json
import os
import secrets
import sys
import time
import uuid
from pathlib import Path

# The core both fakes share, microk8s_core, beside this fake's folder in __tests__/doubles.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
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
from microk8s_core.releases import minor, release, version

HOME = Path(os.environ["FAKE_MICROK8S_DIR"])
ADDRESS = os.environ.get("FAKE_MICROK8S_ADDRESS", "10.1.0.10")
HOSTNAME = os.environ.get("FAKE_MICROK8S_HOSTNAME", "k8s-master")
# The node's InternalIPs in the order its status lists them, when not ADDRESS alone (node_objects.py).
NODE_IPS = [ip for ip in os.environ.get("FAKE_MICROK8S_NODE_IPS", "").split(",") if ip]
CLUSTER = Path(os.environ.get("FAKE_MICROK8S_CLUSTER", str(HOME / "cluster")))
CHANNEL = os.environ.get("FAKE_MICROK8S_CHANNEL", "1.28/stable")
# The clusters' databases, by cluster id: dqlite's copies, which no single node's rebuild loses.
DATABASES = CLUSTER / ".dqlite"
ADDONS = {"dns": "disabled", "hostpath-storage": "disabled", "ha-cluster": "enabled", "registry": "disabled"}
# This node's state as this command holds it (main): what it is to the others, before it is saved.
ME: dict = {}
# admit()'s answer when a control-plane join finds no quorum: the joiner waits in vain.
STALLED = -1
# What `microk8s refresh-certs` prints as $SNAP_DATA.
SHOWN_SNAP_DATA = "/var/snap/microk8s/current"


def load(home: Path) -> dict:
    state = layout.read_json(home / "state.json", {})
    defaults = {"running": True, "addons": dict(ADDONS), "cluster": None, "address": None, "hostname": None}
    defaults.update(channel=CHANNEL if release(CHANNEL) else "1.28/stable", snap_installed=False, restart_until=0)
    return {**defaults, **state}


def save(home: Path, state: dict) -> None:
    layout.write_json(home / "state.json", state)


def database(state: dict) -> dict:
    """
    The dqlite members and Kubernetes nodes of the cluster ``state`` belongs to; a node that
    never formed a cluster with another has none written yet: itself alone.
    """
    path = DATABASES / f"{state['cluster']}.json"
    if path.exists():
        return json.loads(path.read_text())
    return {
        "members": [{"address": f"{state['address']}:{dqlite.PORT}", "role": "voter"}],
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
    layout.write_json(DATABASES / f"{state['cluster']}.json", db)


def register(state: dict) -> None:
    CLUSTER.mkdir(parents=True, exist_ok=True)
    link = CLUSTER / ADDRESS
    if not link.is_symlink():
        link.symlink_to(HOME)
    state.update(address=ADDRESS, hostname=HOSTNAME, **internal_ips())
    template = HOME / layout.CSR_TEMPLATE
    if not template.exists():
        # microk8s' template (server_cert.CSR_TEMPLATE) less its IP.2 = 10.152.183.1, as this fake
        # has always written it: the Salt tests list the certificate's IP addresses exactly.
        template.parent.mkdir(parents=True, exist_ok=True)
        template.write_text("[ alt_names ]\nDNS.1 = kubernetes\nIP.1 = 127.0.0.1\n#MOREIPS\n")
    # The install hook's produce_certs: a CA of this install's own, only when there is none.
    server_cert.produce_ca(HOME)
    if not (HOME / layout.SERVER_CRT).exists():
        server_cert.gen_server_cert(HOME, [ADDRESS])
    if not (HOME / layout.KUBELET_ARGS).exists():
        (HOME / layout.KUBELET_ARGS).parent.mkdir(parents=True, exist_ok=True)
        (HOME / layout.KUBELET_ARGS).write_text(layout.DEFAULT_KUBELET_ARGS)
    if not (HOME / layout.APISERVER_ARGS).exists():
        # default-args/kube-apiserver (kube_objects.py), which a join keeps but for
        # --authorization-mode and --secure-port (join.py update_apiserver).
        (HOME / layout.APISERVER_ARGS).write_text(kube_objects.DEFAULT_APISERVER_ARGS)
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


def is_worker() -> bool:
    return (HOME / layout.WORKER_LOCK).exists()


def members_listed(state: dict) -> list[dict]:
    """get_dqlite_info: the members, or [] when the dqlite query failed its 10 tries (no quorum, a fault)."""
    db = database(state)
    if faults.spend(HOME, "status_dqlite_empty") is not None or not quorate(state, db):
        return []
    return db["members"]


def status_command(state: dict) -> int:
    if is_worker():
        print(status.WORKER)
        return 0
    # is_cluster_ready: kubectl get all / get nodes, which fail without the datastore's quorum.
    ready = state["running"] and not snapd.restarting(state) and quorate(state, database(state))
    # A stopped node: print_yaml with isReady false and nothing of high availability, exit 0.
    ha = state["running"] and state["addons"].get("ha-cluster") == "enabled"
    members = members_listed(state) if ha else []
    status.print_yaml(ready, ha, members, state["addons"].items(), version(state))
    # Restarting after a refresh, or no quorum: status.py exits 1.
    return 0 if ready or not state["running"] else 1


def add_node(state: dict, args: list[str]) -> int:
    if is_worker():
        print(
            "This MicroK8s deployment is acting as a node in a cluster. Please use the microk8s add-node on the master."
        )
        return 1
    token = tokens.issue(HOME / layout.TOKENS, args)
    check = server_cert.check((HOME / layout.SERVER_CRT).read_text())
    print(json.dumps({"token": f"{token}/{check}", "urls": [f"{ADDRESS}:{join.AGENT_PORT}/{token}/{check}"]}, indent=2))
    return 0


def resolves(hosts: str, hostname: str, address: str) -> bool:
    return any(line.split()[:1] == [address] and hostname in line.split()[1:] for line in hosts.splitlines())


def join_command(state: dict, args: list[str]) -> int:
    contacted = join.contact(args[0], minor(state))
    if contacted is None:
        return 1
    host, token, fingerprint = contacted
    worker = "--worker" in args
    target = CLUSTER / host
    if not target.exists() or not load(target.resolve())["running"]:
        print("Traceback (most recent call last):", file=sys.stderr)
        print("ConnectionRefusedError: [Errno 111] Connection refused", file=sys.stderr)
        return 1
    master = target.resolve()
    # The master's certificate, read from its $SNAP_DATA, stands in for the TLS handshake's.
    if fingerprint and "--skip-verify" not in args:
        code = join.verify(host, fingerprint, lambda: (master / layout.SERVER_CRT).read_text())
        if code:
            return code
    with locked(master), database_locked(load(master)):
        code = admit(state, master, token, worker)
    if code in (0, STALLED):
        return join.joined(minor(state), worker, stalled=code == STALLED)
    return code


def admit(state: dict, master: Path, token: str, worker: bool) -> int:
    """The agent of the node at ``master``, in join.go's order (join.py): 0, STALLED, or the joiner's exit code."""
    if not tokens.consume(master / layout.TOKENS, token):
        return join.refused(*join.invalid_token())
    # $FAKE_MICROK8S_DIR/etc-hosts stands in for the master's /etc/hosts when present.
    hosts = master / "etc-hosts"
    if hosts.exists() and not resolves(hosts.read_text(), HOSTNAME, ADDRESS):
        return join.refused(*join.unresolved(HOSTNAME, ADDRESS))
    master_state = load(master)
    spent = faults.spend(master, "join_dqlite_error")
    if spent is not None:
        return join.refused(*join.dqlite_failed(spent, minor(master_state)))
    db = database(master_state)
    if any(dqlite.host_of(m) == ADDRESS for m in db["members"]):
        return join.refused(*join.already_known(ADDRESS, minor(master_state)))
    if not quorate(master_state, db):
        if worker:
            return join.refused(*join.no_control_plane())
        # The agent answers from its local cluster.yaml (no quorum needed); the joiner's dqlite
        # then asks the leader to add it, in vain.
        state["cluster"] = master_state["cluster"]
        return STALLED
    if not worker:
        # go-dqlite: a node joins as a spare (client.Add) and takes its startup role (dqlite.py).
        dqlite.join(db["members"], f"{ADDRESS}:{dqlite.PORT}", online(db, master_state["cluster"]) | {ADDRESS})
    answer = join.response(master, worker)
    # A kubelet whose Node exists takes it over, with the providerID the API server never changes
    # once set (kubelet_node_status.go tryRegisterWithAPIServer; ValidateNodeUpdate).
    taken = next((n for n in db["nodes"] if n["address"] == ADDRESS and n.get("providerID")), None)
    # A new Node has the taints of the kubelet arguments the joiner takes from the node it joins:
    # with --cloud-provider=external, the uninitialized one (cloud_controller.py).
    taints = [] if taken else cloud_controller.registration_taints(answer["kubelet_args"])
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
    join.store(HOME, answer, worker, [ADDRESS])
    return 0


def leave_command(state: dict) -> int:
    """leave.py (leave.py in microk8s_core); the node's Kubernetes node stays until remove-node."""
    worker = is_worker()
    with database_locked(state):
        db = database(state)
        if worker:
            leave.reset_worker(HOME)
        elif not quorate(state, db):
            return leave.no_leader()
        else:
            code = leave.only_copy(db["members"], {ADDRESS})
            if code:
                return code
        db["members"] = [m for m in db["members"] if dqlite.host_of(m) != ADDRESS]
        save_database(state, db)
        # reinit_cluster: a cluster of its own.
        state["cluster"] = secrets.token_hex(8)
        return leave.left(HOME)


def remove_node_command(state: dict, args: list[str]) -> int:
    """remove_node.py (remove_node.py in microk8s_core)."""
    if is_worker():
        print("This MicroK8s deployment is acting as a node in a cluster. Please use microk8s leave.")
        return 1
    db = database(state)
    if not quorate(state, db):
        return remove_node.no_quorum(args[0], "--force" in args)
    answer = remove_node.remove(db, args[0], "--force" in args)
    if answer[3]:
        save_database(state, db)
    return emit(answer)


def ready_status(node: dict, cluster: str) -> str:
    """
    The node's Ready condition: a kubelet posts its node's status to the API server of the
    cluster it joined (its kubeconfig, written by join.py), and the node lifecycle controller
    turns Ready to Unknown when those posts stop. So "True" while its microk8s runs (not
    restarting) and its node is still a member of this cluster (a machine rebuilt at the same
    address runs a cluster of its own); "False" while fake/faults.json "not_ready" is set: a
    kubelet that runs and posts its node not Ready (its container network not ready yet, say);
    else "Unknown".
    """
    link = CLUSTER / node["address"]
    if not link.exists():
        return "Unknown"
    other = load(link.resolve())
    if not other["running"] or snapd.restarting(other) or other["cluster"] != cluster:
        return "Unknown"
    return "False" if faults.setting(link.resolve(), "not_ready", False) else "True"


def ready(node: dict, cluster: str) -> bool:
    return ready_status(node, cluster) == "True"


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


def kubelet(node: dict) -> dict:
    """The state of the microk8s at ``node``'s address, {} when none runs there."""
    link = CLUSTER / node["address"]
    return load(link.resolve()) if link.exists() else {}


def node_item(state: dict, node: dict, status: str, running: dict) -> dict:
    """
    One Node as the API server returns it (node_objects.item): ``status`` its Ready condition
    (ready_status), ``running`` the state of the microk8s at its address (kubelet).
    """
    posting = status != "Unknown"
    # The kubelet posts its version and boot id with its status; the last ones posted stay
    # otherwise (observe_ready keeps the boot id).
    kubelet_version = version(running) if posting else node.get("version") or version(running or state)
    boot_id = running.get("boot_id") if posting else node.get("boot_id")
    return node_objects.item(node, status, kubelet_version, boot_id or "")


def get_nodes(state: dict, name: str | None = None) -> int:
    """
    kubectl get nodes -o json, or get node ``name``: the Nodes as the API server holds them, each
    Ready condition's change (node_objects.observe_ready) written to the database first.
    """
    with database_locked(state):
        db = database(state)
        # Each node's status and kubelet, read once for the record and the answer.
        seen = {
            node["name"]: (ready_status(node, state["cluster"]), kubelet(node))
            for node in db["nodes"]
            if name in (None, node["name"])
        }
        observed = [
            node_objects.observe_ready(node, seen[node["name"]][0], seen[node["name"]][1].get("boot_id"))
            for node in db["nodes"]
            if node["name"] in seen
        ]
        if any(observed):
            save_database(state, db)
    item = lambda n: node_item(state, n, *seen[n["name"]])  # noqa: E731
    if name is not None:
        return kubectl.get_node(db["nodes"], name, item)
    return kubectl.get_nodes(db["nodes"], item)


def written(state: dict, db: dict, answer: tuple[int, str, str, bool], record: bool = False) -> int:
    """
    Prints a kubectl answer; when it changed the database, writes it back first, and with
    ``record`` (a change of objects other than Nodes) the record, $FAKE_MICROK8S_DIR/fake/objects.json.
    """
    if answer[3]:
        save_database(state, db)
        if record:
            kube_objects.record(HOME, db["objects"])
    return emit(answer)


def kubectl_schedule(state: dict, verb: str, args: list[str]) -> int:
    """kubectl cordon / uncordon / drain <node> (kubectl.py in microk8s_core)."""
    db = database(state)
    found, answer = kubectl.schedule(db["nodes"], verb, args)
    code = written(state, db, answer)
    if found is None or verb != "drain":
        return code
    # A kubelet that still posts (Ready True or False) deletes the evicted pods; none confirms once it stopped.
    posting = ready_status(found, state["cluster"]) != "Unknown"
    drained = kubectl.drain(db.setdefault("objects", {}), found["name"], args, posting)
    return written(state, db, drained, record=True)


def kubectl_command(state: dict, args: list[str]) -> int:
    if is_worker():
        print(kubectl.WORKER)
        return 0
    if snapd.restarting(state) or not state["running"]:
        print(kubectl.API_DOWN, file=sys.stderr)
        return 1
    if not quorate(state, database(state)):
        # The API server's datastore does not answer: its 504.
        return kubectl.unavailable(args)
    cloud_controllers(state)
    if args[:2] in (["get", "nodes"], ["get", "node"]) and len(kubectl.operands(args)) == 3:
        return get_nodes(state, kubectl.operands(args)[2])
    if args[:2] == ["get", "nodes"]:
        return get_nodes(state)
    edit = args[:1] in (["label"], ["taint"]) or (args[:1] in (["annotate"], ["patch"]) and kubectl.node_word(args[1:]))
    if edit:
        with database_locked(state):
            db = database(state)
            return written(state, db, kubectl.edit(db["nodes"], args[0], args[1:])[1])
    if args[:1] in (["apply"], ["get"], ["annotate"]):
        with database_locked(state):
            db = database(state)
            answer = kubectl.objects(db.setdefault("objects", {}), args[0], args[1:], sys.stdin.read)
            return written(state, db, answer, record=True)
    if args[:1] in (["cordon"], ["uncordon"], ["drain"]):
        with database_locked(state):
            return kubectl_schedule(state, args[0], args[1:])
    return kubectl.not_reproduced(args)


def snap(state: dict, args: list[str]) -> int:
    """The snap command, for microk8s only: install, refresh (--hold, --unhold), list (snapd's cmd/snap)."""
    channel = snapd.channel(args)
    if args[:2] == ["list", "microk8s"]:
        print(snapd.listing(state, version(state), 13))
        return 0
    if args[:1] == ["restart"]:
        return emit(snapd.restart_services(state, args[1:], faults.restart_seconds(HOME)))
    if snapd.is_hold_command(args):
        return emit(snapd.hold(state, args))
    if args[:1] == ["watch"]:
        return emit(snapd.watch(state, args))
    no_wait, args = snapd.no_wait(args)
    if args[:2] == ["refresh", "microk8s"] and faults.spend(HOME, "auto_refresh_in_progress") is not None:
        print(snapd.refused(state), file=sys.stderr)
        return 1
    if args[:2] not in (["install", "microk8s"], ["refresh", "microk8s"]):
        print(f"fake snap: unsupported {args}", file=sys.stderr)
        return 2
    if args[0] == "install" and state["snap_installed"]:
        print(snapd.ALREADY_INSTALLED)
        return 0
    if channel is not None and release(channel) is None:
        print(f"fake snap: channel {channel} is not reproduced (only 1.NN/<risk>)", file=sys.stderr)
        return 2
    if args[0] == "install":
        state.update(snap_installed=True, channel=channel or state["channel"])
        print(snapd.installed(state["channel"], version(state)))
        return 0
    if channel is None or channel == state["channel"]:
        print(snapd.NO_UPDATES)
        return 0
    if faults.spend(HOME, "refresh_fails") is not None:
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
    snapd.restart(state, faults.restart_seconds(HOME))
    with database_locked(state):
        db = database(state)
        # The kubelet reports its new version through the API server, which needs the quorum.
        if quorate(state, db):
            for node in db["nodes"]:
                if node["address"] == ADDRESS:
                    node["version"] = version(state)
            save_database(state, db)
    print(change if no_wait else snapd.refreshed(channel, version(state)))
    return 0


def enable(state: dict, command: str, name: str) -> int:
    """enable.py / disable.py of one addon (status.py in microk8s_core)."""
    if name not in state["addons"]:
        print(f"Addon {name} was not found in any repository", file=sys.stderr)
        return 1
    if not quorate(state, database(state)):
        # The addon's scripts apply and delete through kubectl: the API server's 504.
        return kubectl.addon_timed_out()
    state["addons"][name] = "enabled" if command == "enable" else "disabled"
    if name == "hostpath-storage" and command == "enable":
        # The addon applies its default StorageClass (kube_objects.hostpath_storage_class).
        with database_locked(state):
            db = database(state)
            storage_class = kube_objects.hostpath_storage_class()
            db.setdefault("objects", {})[kube_objects.key(storage_class)] = storage_class
            save_database(state, db)
    print(f"{command.capitalize()}d {name}")
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
            return snapd.restarting(state) or not quorate(state, database(state))

        while state["running"] and waiting() and time.time() < deadline:
            time.sleep(0.1)
        code = 0 if state["running"] and not waiting() else 1
    elif command == "status":
        code = status_command(state)
    elif command in ("start", "stop"):
        state["running"] = command == "start"
        code = 0
    elif command == "fake-auto-refresh":
        snapd.auto_refresh(state, faults.restart_seconds(HOME))
        code = 0
    elif command == "fake-boot":
        # The machine came up again (see the docstring): a new boot id, the services starting.
        state.update(boot_id=str(uuid.uuid4()), running=True)
        snapd.restart(state, faults.restart_seconds(HOME))
        code = 0
    elif command in ("enable", "disable") and len(args) == 2:
        code = enable(state, command, args[1].split(":", 1)[0])
        if code:
            return code
    elif command == "add-node":
        with locked(HOME):
            code = add_node(state, args[1:])
    elif command == "join":
        code = join_command(state, args[1:])
    elif command == "leave":
        code = leave_command(state)
    elif command == "remove-node":
        with database_locked(state):
            code = remove_node_command(state, args[1:])
    elif command == "refresh-certs":
        code = server_cert.refresh_certs(args[1:], HOME, [ADDRESS], SHOWN_SNAP_DATA)
    elif command == "kubectl":
        code = kubectl_command(state, args[1:])
    else:
        print(f"fake microk8s: unsupported {args}", file=sys.stderr)
        return 2
    save(HOME, state)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
