"""
The microk8s join protocol end to end: a real Salt master (with the project's master.conf and
its reactor) and real minions on 127.0.0.1 run the real microk8s.master and microk8s.joined
SLS, the real modules, the real mine with its ACL and the real reactor, against fake microk8s
nodes that spend single-use tokens the way the cluster agent does.

Only three SLS are replaced, through an overlay in front of salt/: microk8s/init.sls and
microk8s/install.sls (they would install the snap; joiners include only the latter) and
core/hosts.sls (it would write this machine's /etc/hosts; the overlay writes the same
kube_on_os.hosts_file into the fake master's stand-in for it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from harness.layout import LAB, fake_nodes
from harness.provisioners import PROVISIONERS
from harness.real_salt import write_wrappers
from harness.salt_cluster import PROTOCOL_OVERLAY, SaltCluster, from_terraform_sls

MASTER, VOTER, WORKER, BASTION = (m.fqdn for m in (*LAB.kube_nodes(3), LAB.bastion))
NODES = fake_nodes(*LAB.kube_nodes(3), LAB.bastion)
PILLAR = {
    # The fake nodes all live on this machine: their private addresses come from the minion
    # config instead of the interfaces, everything else about the mine is real.
    "mine_functions": {"network.ip_addrs": [{"mine_function": "config.get"}, "fake_ip_addrs"]},
    "microk8s": {
        "master": MASTER,
        "nodes": [{"id": node, "address": NODES[node][0]} for node in (MASTER, VOTER, WORKER)],
        "control_plane": [MASTER, VOTER],
        "join": {"attempts": 8, "interval": 1, "max_interval": 2},
    },
}
# What orchestrate.sh applies masterless first (the real one configures this machine's
# salt-master); the salt-call wrapper's file root is this overlay.
OVERLAY = {**PROTOCOL_OVERLAY, "salt_master/init.sls": "koo-test-salt-master:\n  test.succeed_without_changes: []\n"}
JOINERS = f"{VOTER},{WORKER}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    salt_cluster = SaltCluster(tmp_path_factory.mktemp("salt-cluster"), NODES, PILLAR, OVERLAY)
    # The bastion has no microk8s: it only proves who may read the tokens from the mine.
    salt_cluster.fakes[BASTION].bin.joinpath("microk8s").unlink()
    try:
        salt_cluster.start()
        yield salt_cluster
    finally:
        salt_cluster.stop()


@pytest.fixture
def fresh(cluster):
    """Every fake node as new, no tokens issued, the mine empty; then the orchestration's prelude."""
    for fake in cluster.fakes.values():
        shutil.rmtree(fake.home, ignore_errors=True)
        if (fake.bin / "microk8s").exists():
            fake.run("status", "--format", "yaml")
    shutil.rmtree(cluster.root / MASTER / "cache" / "kube-on-os", ignore_errors=True)
    cluster.salt("*", "mine.flush")
    for function in ("saltutil.sync_all", "saltutil.refresh_pillar", "mine.update"):
        returns = cluster.salt("*", function)
        assert set(returns) == set(NODES), f"{function}: {returns}\n{cluster.logs()}"
    return cluster


def only(returns: dict, minion: str, state_id: str) -> dict:
    assert isinstance(returns.get(minion), dict), f"{minion} did not run its states: {returns.get(minion)}"
    return returns[minion][state_id]


def joins(cluster, minion: str) -> list[str]:
    """The join URLs a node used, from its fake microk8s' own call log."""
    log = cluster.fakes[minion].home / "calls.log"
    return [line.split()[1] for line in log.read_text().splitlines() if line.startswith("join ")]


def database(cluster) -> dict:
    return cluster.fakes[MASTER].database()


def publish_tokens(cluster) -> dict:
    published = only(cluster.state(MASTER, "microk8s.master"), MASTER, "microk8s-tokens-microk8s-join-tokens-published")
    assert published["result"] is True, published
    return published


def test_two_nodes_join_in_parallel_each_with_its_own_single_use_token(fresh):
    cluster = fresh
    assert publish_tokens(cluster)["changes"] == {
        "tokens": {"old": {VOTER: None, WORKER: None}, "new": {VOTER: 1, WORKER: 1}}
    }
    # The mine serves the tokens to the Kubernetes nodes only.
    assert cluster.salt(BASTION, "mine.get", MASTER, "microk8s.join_tokens") == {BASTION: {}}
    seen = cluster.salt(WORKER, "mine.get", MASTER, "microk8s.join_tokens")[WORKER][MASTER]
    assert sorted(seen) == [VOTER, WORKER]

    joined = cluster.state(JOINERS, "microk8s.joined", tgt_type="list")
    for minion, role in ((VOTER, "control-plane"), (WORKER, "worker")):
        state = only(joined, minion, "microk8s-joined-microk8s-cluster-joined")
        assert state["result"] is True, state["comment"]
        assert state["changes"] == {"cluster": {"old": "standalone", "new": f"{role} of {MASTER}"}}
    assert [m["address"] for m in database(cluster)["members"]] == ["10.1.0.10:19001", "10.1.0.100:19001"]
    assert sorted(n["name"] for n in database(cluster)["nodes"]) == ["k8s-master", "k8s-worker-0", "k8s-worker-1"]
    assert (cluster.fakes[WORKER].home / "var/lock/clustered.lock").exists()
    # One attempt each, with different tokens, both spent: nothing is left to join with.
    assert len(joins(cluster, VOTER)) == len(joins(cluster, WORKER)) == 1
    assert joins(cluster, VOTER)[0].split("/")[1] != joins(cluster, WORKER)[0].split("/")[1]
    assert (cluster.fakes[MASTER].home / "credentials/cluster-tokens.txt").read_text() == ""

    again = cluster.state(JOINERS, "microk8s.joined", tgt_type="list")
    for minion in (VOTER, WORKER):
        assert only(again, minion, "microk8s-joined-microk8s-cluster-joined")["changes"] == {}
    assert publish_tokens(cluster)["changes"] == {
        "tokens": {"old": {VOTER: 1, WORKER: 1}, "new": {VOTER: None, WORKER: None}}
    }
    assert publish_tokens(cluster)["changes"] == {}
    assert cluster.salt(MASTER, "microk8s.cluster_check")[MASTER] == {
        "ready": ["k8s-master", "k8s-worker-0", "k8s-worker-1"],
        "expected": 3,
    }
    # Commands, job returns and state results are logged at info; no token is among them.
    tokens = [url.split("/")[1] for url in joins(cluster, VOTER) + joins(cluster, WORKER)]
    logs = {path: path.read_text() for path in cluster.root.rglob("*.log") if "snap_data" not in path.parts}
    assert sum("Executing command microk8s" in text for text in logs.values()) == 3
    assert {path.name: [t for t in tokens if t in text] for path, text in logs.items()} == {
        path.name: [] for path in logs
    }


def test_a_token_spent_by_a_failed_join_is_renewed_through_the_reactor(fresh):
    cluster = fresh
    publish_tokens(cluster)
    # The master cannot resolve the worker yet: the attempt fails and spends the token.
    (cluster.fakes[MASTER].home / "etc-hosts").write_text("10.1.0.10 k8s-master.lab.example k8s-master\n")
    joined = cluster.state(WORKER, "microk8s.joined")
    state = only(joined, WORKER, "microk8s-joined-microk8s-cluster-joined")
    assert state["result"] is True, state["comment"]
    first, second = joins(cluster, WORKER)
    assert first != second
    ledger = cluster.salt(MASTER, "microk8s.join_tokens")[MASTER]
    assert ledger[WORKER]["serial"] == 2
    # The reactor's renewal refreshed the master's hosts file from the mine first.
    hosts = (cluster.fakes[MASTER].home / "etc-hosts").read_text()
    assert "10.1.0.101 k8s-worker-1.lab.example k8s-worker-1" in hosts.splitlines()


def test_a_rebuilt_control_plane_node_rejoins_after_its_stale_member_is_removed(fresh):
    cluster = fresh
    publish_tokens(cluster)
    assert only(cluster.state(VOTER, "microk8s.joined"), VOTER, "microk8s-joined-microk8s-cluster-joined")["result"]
    publish_tokens(cluster)  # withdraws the spent token: the master counts the node as joined
    # Rebuilt with the same name and address: a fresh microk8s the master still lists in dqlite.
    shutil.rmtree(cluster.fakes[VOTER].home)
    state = only(cluster.state(VOTER, "microk8s.joined"), VOTER, "microk8s-joined-microk8s-cluster-joined")
    assert state["result"] is True, state["comment"]
    assert state["changes"] == {"cluster": {"old": "standalone", "new": f"control-plane of {MASTER}"}}
    # Asked for a token: the master removed the member its address still had, and it joined at
    # the first attempt (an "already known" refusal would have led there too, one join later).
    assert len(joins(cluster, VOTER)) == 1
    assert [m["address"] for m in database(cluster)["members"]] == ["10.1.0.10:19001", "10.1.0.100:19001"]


def test_joiners_give_up_clearly_when_the_master_never_becomes_ready(fresh):
    cluster = fresh
    publish_tokens(cluster)
    assert cluster.fakes[MASTER].run("stop").returncode == 0
    state = only(cluster.state(WORKER, "microk8s.joined"), WORKER, "microk8s-joined-microk8s-cluster-joined")
    assert state["result"] is False
    assert state["comment"].startswith(
        f"not joined to {MASTER} after 8 attempts; last: microk8s join 10.1.0.10:25000/<token>"
    )
    assert "Connection refused" in state["comment"]
    assert len(joins(cluster, WORKER)) == 8


def inject(cluster, minion: str, **faults: int) -> None:
    """Faults of the fake microk8s (its docstring): each count is spent one use at a time."""
    path = cluster.fakes[minion].home / "fake" / "faults.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(faults))


def test_a_url_naming_a_refreshed_certificate_is_republished_and_the_token_survives(fresh):
    cluster = fresh
    publish_tokens(cluster)
    # certificates.sls refreshes server.crt after the tokens were published (a new floating IP).
    assert cluster.fakes[MASTER].run("refresh-certs", "--cert", "server.crt").returncode == 0
    state = only(cluster.state(WORKER, "microk8s.joined"), WORKER, "microk8s-joined-microk8s-cluster-joined")
    assert state["result"] is True, state["comment"]
    first, second = joins(cluster, WORKER)
    # join.py refused the old fingerprint before sending the token: the same token, republished.
    assert first.split("/")[1] == second.split("/")[1] and first.split("/")[2] != second.split("/")[2]
    assert cluster.salt(MASTER, "microk8s.join_tokens")[MASTER][WORKER]["serial"] == 2


def test_a_dqlite_that_does_not_answer_a_join_costs_a_token_and_a_renewal(fresh):
    cluster = fresh
    publish_tokens(cluster)
    inject(cluster, MASTER, join_dqlite_error=1)
    state = only(cluster.state(VOTER, "microk8s.joined"), VOTER, "microk8s-joined-microk8s-cluster-joined")
    assert state["result"] is True, state["comment"]
    first, second = joins(cluster, VOTER)
    assert first.split("/")[1] != second.split("/")[1]
    assert [m["address"] for m in database(cluster)["members"]] == ["10.1.0.10:19001", "10.1.0.100:19001"]


def test_an_empty_member_list_never_leads_to_a_rejoin_or_a_removal(fresh):
    cluster = fresh
    publish_tokens(cluster)
    assert only(cluster.state(VOTER, "microk8s.joined"), VOTER, "microk8s-joined-microk8s-cluster-joined")["result"]
    # microk8s#2190: status lists nobody for longer than the module asks: the state stops.
    inject(cluster, VOTER, status_dqlite_empty=3)
    state = only(cluster.state(VOTER, "microk8s.joined"), VOTER, "microk8s-joined-microk8s-cluster-joined")
    assert state["result"] is False
    assert state["comment"].startswith("cannot tell whether this node is in a cluster: microk8s status listed no")
    # Once: read again, the voter is found in the cluster, and nothing changes.
    inject(cluster, VOTER, status_dqlite_empty=1)
    state = only(cluster.state(VOTER, "microk8s.joined"), VOTER, "microk8s-joined-microk8s-cluster-joined")
    assert (state["result"], state["changes"]) == (True, {})
    assert len(joins(cluster, VOTER)) == 1
    assert [m["address"] for m in database(cluster)["members"]] == ["10.1.0.10:19001", "10.1.0.100:19001"]


def orchestrate(cluster, sls: str, channel: str) -> tuple[int, dict]:
    """``salt-run state.orchestrate`` with microk8s:channel set in the pillar Terraform writes."""
    (cluster.pillar_root / "_from_terraform.sls").write_text(
        from_terraform_sls({**PILLAR, "microk8s": {**PILLAR["microk8s"], "channel": channel}})
    )
    result = cluster._run("salt-run", "--out=json", "state.orchestrate", sls, timeout=600)
    return result.returncode, json.loads(result.stdout or "{}")


def kubelets(cluster) -> dict:
    nodes = json.loads(cluster.fakes[MASTER].run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    return {
        n["metadata"]["name"]: (n["status"]["nodeInfo"]["kubeletVersion"], n["spec"].get("unschedulable", False))
        for n in nodes
    }


def drains(cluster) -> list[str]:
    log = (cluster.fakes[MASTER].home / "calls.log").read_text().splitlines()
    return [line.split()[2] for line in log if line.startswith("kubectl drain ")]


@pytest.fixture
def joined(fresh):
    cluster = fresh
    publish_tokens(cluster)
    joined = cluster.state(JOINERS, "microk8s.joined", tgt_type="list")
    for minion in (VOTER, WORKER):
        assert only(joined, minion, "microk8s-joined-microk8s-cluster-joined")["result"] is True
    yield cluster
    (cluster.pillar_root / "_from_terraform.sls").write_text(from_terraform_sls(PILLAR))


def test_a_new_channel_rolls_through_the_nodes_one_at_a_time_control_plane_first(joined):
    cluster = joined
    assert set(kubelets(cluster).values()) == {("v1.28.15", False)}
    status, _ = orchestrate(cluster, "orch.upgrade", "1.29/stable")
    assert status == 0, cluster.logs()
    assert kubelets(cluster) == {name: ("v1.29.0", False) for name in ("k8s-master", "k8s-worker-0", "k8s-worker-1")}
    assert drains(cluster) == ["k8s-master", "k8s-worker-0", "k8s-worker-1"]
    # Run again: every node is at the release; nothing is drained.
    status, _ = orchestrate(cluster, "orch.upgrade", "1.29/stable")
    assert (status, drains(cluster)) == (0, ["k8s-master", "k8s-worker-0", "k8s-worker-1"])


def upgrade_sh(cluster, channel: str) -> subprocess.CompletedProcess:
    """provisioners/upgrade.sh as the chain runs it, with salt, salt-run and salt-call pointed at this cluster."""
    (cluster.pillar_root / "_from_terraform.sls").write_text(
        from_terraform_sls({**PILLAR, "microk8s": {**PILLAR["microk8s"], "channel": channel}})
    )
    wrappers = cluster.root / "wrappers"
    write_wrappers(
        wrappers, cluster.master_dir, cluster.root / "calls.log", cluster.root / MASTER / "etc", cluster.overlay
    )
    return subprocess.run(
        ["bash", str(PROVISIONERS / "upgrade.sh"), MASTER, channel],
        env={**os.environ, "PATH": f"{wrappers}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.fixture
def channel_restored(fresh):
    yield fresh
    (fresh.pillar_root / "_from_terraform.sls").write_text(from_terraform_sls(PILLAR))


def test_the_chain_rolls_only_the_nodes_in_the_cluster_and_leaves_a_new_one_to_orch_deploy(channel_restored):
    cluster = channel_restored
    # The worker's machine is new (a scale-up with the new channel): it is in the pillar, not in the cluster.
    publish_tokens(cluster)
    assert only(cluster.state(VOTER, "microk8s.joined"), VOTER, "microk8s-joined-microk8s-cluster-joined")["result"]
    # microk8s_channel unset: the cluster keeps the channel its nodes track.
    kept = upgrade_sh(cluster, "")
    assert (kept.returncode, kept.stdout) == (
        0,
        "microk8s_channel unset: the cluster keeps 1.28/stable, the channel its nodes track; nothing to roll\n",
    ), kept.stderr
    # Two minors ahead: one orch.upgrade per minor, every node through 1.29 before any goes on.
    result = upgrade_sh(cluster, "1.30/stable")
    assert result.returncode == 0, result.stderr + cluster.logs()
    assert [line for line in result.stdout.splitlines() if line.startswith("microk8s_channel")] == [
        "microk8s_channel 1.30/stable: rolling 2 of 2 nodes to 1.30 one minor at a time, in 2 steps: "
        "1.29/stable, 1.30/stable",
        f"microk8s_channel 1.30/stable: rolling 2 of 2 nodes to 1.29 (step 1 of 2), one at a time: {MASTER}, {VOTER}",
        f"microk8s_channel 1.30/stable: rolling 2 of 2 nodes to 1.30 (step 2 of 2), one at a time: {MASTER}, {VOTER}",
    ]
    assert result.stdout.splitlines()[-1].startswith("orchestration orch.upgrade succeeded in ")
    assert drains(cluster) == ["k8s-master", "k8s-worker-0"] * 2
    assert kubelets(cluster) == {"k8s-master": ("v1.30.0", False), "k8s-worker-0": ("v1.30.0", False)}
    # Once rolled, the chain's next run finds nothing to do and starts no orchestration.
    again = upgrade_sh(cluster, "1.30/stable")
    assert (again.returncode, again.stdout) == (
        0,
        "microk8s_channel 1.30/stable: all 2 nodes in the cluster run 1.30; nothing to roll\n",
    )
    # A downgrade stops before any node is touched, naming the node.
    back = upgrade_sh(cluster, "1.29/stable")
    assert back.returncode == 1
    assert back.stderr == (
        f"cannot upgrade to microk8s_channel 1.29/stable: {MASTER} runs v1.30.0: microk8s_channel 1.29/stable "
        "would downgrade it; Kubernetes cannot go back a minor release\n"
    )
    assert drains(cluster) == ["k8s-master", "k8s-worker-0"] * 2


def test_a_channel_that_skips_a_minor_touches_no_node(joined):
    cluster = joined
    status, result = orchestrate(cluster, "orch.upgrade", "1.30/stable")
    assert status != 0
    assert "skips a minor release; upgrade one at a time (1.29/stable next)" in json.dumps(result)
    assert drains(cluster) == []
    assert set(kubelets(cluster).values()) == {("v1.28.15", False)}
