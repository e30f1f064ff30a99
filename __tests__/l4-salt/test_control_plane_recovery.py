"""
A rebuilt Kubernetes master, with real Salt: a real Salt master (the project's master.conf and
reactor) and real minions drive fake microk8s nodes that keep a CA each, made at install and
replaced by the cluster's on a control-plane join (__tests__/doubles/microk8s/fake_microk8s.py).
Three voters and a worker form a cluster; the master's machine is rebuilt (a fresh microk8s: a
new $SNAP_DATA, a CA of its own, its old member NotReady; a fresh Salt cache); then the steps of
orch.deploy run again, each node's highstate being its SLS from salt/top.sls. The master must
join the cluster the voters kept, through the first of them ("Who issues" in
docs/microk8s-module.md), and issue the tokens once it is back.

The overlay in front of salt/ is the join protocol's (harness.salt_cluster.PROTOCOL_OVERLAY).
"""

from __future__ import annotations

import shutil

import pytest
from harness.layout import LAB, fake_nodes
from harness.salt_cluster import PROTOCOL_OVERLAY, SaltCluster

MASTER, VOTER_1, VOTER_2, WORKER = (m.fqdn for m in LAB.kube_nodes(4))
VOTERS = [m.fqdn for m in LAB.control_plane(4)]
NODES = fake_nodes(*LAB.kube_nodes(4))
PILLAR = {
    # The fake nodes share this machine: their private addresses come from the minion config.
    "mine_functions": {"network.ip_addrs": [{"mine_function": "config.get"}, "fake_ip_addrs"]},
    "microk8s": {
        "master": MASTER,
        "nodes": [{"id": node, "address": address} for node, (address, _) in NODES.items()],
        "control_plane": VOTERS,
        "join": {"attempts": 8, "interval": 1, "max_interval": 2},
    },
}
JOINED = "microk8s-joined-microk8s-cluster-joined"
TOKENS = "microk8s-tokens-microk8s-join-tokens-published"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    salt_cluster = SaltCluster(tmp_path_factory.mktemp("salt-cluster"), NODES, PILLAR, PROTOCOL_OVERLAY)
    try:
        salt_cluster.start()
        yield salt_cluster
    finally:
        salt_cluster.stop()


def highstate(cluster, minion: str) -> dict:
    """The minion's SLS from the top file, as one state.sls; every state must succeed."""
    # Salt's own top-file matching (the compound entry for every node but the master included),
    # less `core` (it would change this machine; the overlay's core/hosts.sls comes in through
    # microk8s.joined).
    top = cluster.salt(minion, "state.show_top")[minion]
    sls = [s for s in top["base"] if s != "core"]
    returns = cluster.state(minion, ",".join(sls))
    assert isinstance(returns.get(minion), dict), f"{minion}: {returns.get(minion)}\n{cluster.logs()}"
    failed = {key: state["comment"] for key, state in returns[minion].items() if state["result"] is not True}
    assert not failed, f"{minion}: {failed}"
    return returns[minion]


def deploy(cluster) -> dict:
    """
    orch.deploy's steps in its order: every minion syncs, refreshes its pillar and updates the
    mine; the master's highstate; the other voters one at a time; the workers; the spent tokens
    (microk8s.tokens on the voters); the cluster check. Returns ``{minion: its highstate}``.
    """
    for function in ("saltutil.sync_all", "saltutil.refresh_pillar", "mine.update"):
        returns = cluster.salt("*", function)
        assert set(returns) == set(NODES), f"{function}: {returns}\n{cluster.logs()}"
    results = {minion: highstate(cluster, minion) for minion in (*VOTERS, WORKER)}
    spent = cluster.state(",".join(VOTERS), "microk8s.tokens", tgt_type="list")
    assert all(spent[voter][TOKENS]["result"] is True for voter in VOTERS), spent
    check = cluster.salt(MASTER, "microk8s.cluster_check")[MASTER]
    assert check == {"ready": sorted(name for _, name in NODES.values()), "expected": 4}, check
    return results


def calls(cluster, minion: str, command: str) -> list[str]:
    """The microk8s commands a fake node ran that start with ``command``, from its call log."""
    log = cluster.fakes[minion].home / "calls.log"
    return [line for line in log.read_text().splitlines() if line.startswith(command)]


def databases(cluster) -> list[str]:
    """The clusters that have a database: a node that only ever stood alone has none."""
    return sorted(path.stem for path in (cluster.root / "fake-cluster" / ".dqlite").glob("*.json"))


def rebuild(cluster, minion: str) -> None:
    """The machine rebuilt at its name and address: a fresh microk8s install and Salt cache."""
    fake = cluster.fakes[minion]
    shutil.rmtree(fake.home)
    fake.run("status", "--format", "yaml")  # the snap's install: a new $SNAP_DATA with a CA of its own
    shutil.rmtree(cluster.root / minion / "cache" / "kube-on-os", ignore_errors=True)


def test_a_rebuilt_master_joins_the_cluster_through_a_voter_and_then_issues_again(cluster):
    deploy(cluster)
    fakes = cluster.fakes
    cluster_ca = fakes[MASTER].ca()
    assert {fakes[voter].ca() for voter in VOTERS} == {cluster_ca}
    (formed,) = databases(cluster)
    addresses = [f"{NODES[voter][0]}:19001" for voter in VOTERS]
    assert [m["address"] for m in fakes[MASTER].database()["members"]] == addresses

    rebuild(cluster, MASTER)
    assert fakes[MASTER].ca() != cluster_ca
    # Once the rebuilt master's report is in the mine (orch.deploy updates it first), it names a
    # CA other than the cluster's: every node takes the first voter for the issuer.
    cluster.salt(MASTER, "mine.update")
    assert cluster.salt("k8s-*", "microk8s.issuer") == {node: VOTER_1 for node in NODES}
    results = deploy(cluster)

    # The master joined through the first voter, after that voter removed its old member (the
    # NotReady node the rebuild left behind), and took the cluster's CA.
    assert results[MASTER][JOINED]["changes"] == {
        "cluster": {"old": "standalone", "new": f"control-plane of {VOTER_1}"}
    }
    assert [line.split()[1].split(":")[0] for line in calls(cluster, MASTER, "join ")] == [NODES[VOTER_1][0]]
    assert {fakes[node].ca() for node in VOTERS} == {cluster_ca}
    reports = cluster.salt(",".join(VOTERS), "microk8s.membership", tgt_type="list")
    assert len({reports[voter]["ca"] for voter in VOTERS}) == 1 and reports[MASTER]["ca"] is not None
    # No second cluster, and no healthy voter removed: one removal, of the master's old member.
    assert databases(cluster) == [formed]
    assert {fakes[node].state()["cluster"] for node in NODES} == {formed}
    members = [m["address"] for m in fakes[VOTER_1].database()["members"]]
    assert members == [addresses[1], addresses[2], addresses[0]]
    removals = {node: calls(cluster, node, "remove-node") for node in NODES}
    assert removals == {**{node: [] for node in NODES}, VOTER_1: [f"remove-node {NODES[MASTER][0]} --force"]}
    # Back in the cluster, the master issues again: the voter withdrew the master's token in its
    # highstate, and every node names the master as the issuer.
    assert results[VOTER_1][TOKENS]["changes"] == {"tokens": {"old": {MASTER: 1}, "new": {MASTER: None}}}
    assert cluster.salt("k8s-*", "microk8s.issuer") == {node: MASTER for node in NODES}

    # A worker rebuilt now gets its token from the master, and joins through it.
    rebuild(cluster, WORKER)
    deploy(cluster)
    assert [line.split()[1].split(":")[0] for line in calls(cluster, WORKER, "join ")] == [NODES[MASTER][0]]
    assert len(calls(cluster, MASTER, "add-node")) == 1
    assert len(calls(cluster, VOTER_1, "add-node")) == 1  # the master's token, while it stood alone
    assert cluster.salt(MASTER, "microk8s.join_tokens")[MASTER] == {}
    assert databases(cluster) == [formed]
