"""
The microk8s module's _membership: the dqlite members and Kubernetes nodes read from microk8s,
the roles the pillar gives (master, voters, workers), who issues the join tokens, and removing a
node's member, never a Ready one on a joiner's word.
"""

from __future__ import annotations

import calendar
import importlib
import json

import pytest
from microk8s_support import CP, CP_JOINER, MASTER, NO_LOCK, PILLAR, WORKER, Cluster, fake_cli, fixture, ok, with_status
from salt.exceptions import CommandExecutionError


@pytest.mark.parametrize(
    ("fixture_name", "role", "members"),
    [
        ("status-single.yaml", "standalone", []),
        ("status-ha.yaml", "control-plane", ["10.1.0.10", "10.1.0.100", "10.1.0.101", "10.1.0.102"]),
    ],
)
def test_membership_tells_a_standalone_node_from_a_control_plane_member(microk8s, fixture_name, role, members):
    microk8s.__salt__ = with_status(fixture(fixture_name))
    assert microk8s.membership() == {"role": role, "members": members, "ca": None}


def test_kubectl_on_a_worker_or_anything_but_a_node_list_is_a_clear_error(microk8s):
    kubectl = ("kubectl", "get", "nodes", "-o", "json")
    for text, message in [
        (fixture("kubectl-worker.txt"), "this node joined with --worker and cannot list nodes"),
        ("error: the server doesn't have a resource type", "kubectl get nodes printed no NodeList"),
        ('{"items": [{"status": {}}]}', "kubectl get nodes printed no NodeList"),
    ]:
        microk8s.__salt__ = {"cmd.run_all": fake_cli({kubectl: ok(text)})}
        with pytest.raises(CommandExecutionError, match=message):
            microk8s.nodes()


@pytest.fixture
def member_waits(monkeypatch, microk8s):
    waited = []
    monkeypatch.setattr(importlib.import_module("microk8s._membership").time, "sleep", waited.append)
    return waited


def test_an_empty_member_list_with_ha_enabled_is_unknown_not_standalone(microk8s, member_waits):
    # microk8s#2190: dqlite did not answer status.py; the node is not alone.
    microk8s.__salt__ = with_status(fixture("status-ha-no-members.yaml"))
    with pytest.raises(CommandExecutionError) as raised:
        microk8s.membership()
    assert str(raised.value) == (
        "microk8s status listed no dqlite members 3 times while high availability is enabled "
        "(dqlite did not answer); nothing is decided on an empty list"
    )
    assert member_waits == [5, 5]
    assert len(microk8s.__salt__["cmd.run_all"].calls) == 3


def test_a_transient_empty_member_list_is_read_again(microk8s, member_waits):
    texts = [fixture("status-ha-no-members.yaml"), fixture("status-ha.yaml")]
    microk8s.__salt__ = {
        **NO_LOCK,
        "cmd.run_all": lambda cmd, **kwargs: ok(texts.pop(0)),
    }
    assert microk8s.membership()["role"] == "control-plane"
    assert member_waits == [5]


def test_nodes_and_the_cluster_check_read_kubectl(microk8s):
    kubectl = ("kubectl", "get", "nodes", "-o", "json")
    microk8s.__salt__ = {
        "cmd.run_all": fake_cli({kubectl: ok(fixture("kubectl-nodes.json"))}),
        "pillar.get": lambda key, default=None: PILLAR if key == "microk8s" else default,
    }
    assert microk8s.nodes() == [
        {
            "name": "k8s-master",
            "address": "10.1.0.10",
            "addresses": ["10.1.0.10"],
            "ready": True,
            "unreachable": False,
            "ready_changed": "2026-12-07T09:58:41Z",
            "unschedulable": False,
            "version": None,
            "boot_id": None,
        },
        {
            "name": "k8s-worker-0",
            "address": "10.1.0.100",
            "addresses": ["10.1.0.100"],
            "ready": False,
            # Its Ready condition is Unknown: its kubelet stopped reporting.
            "unreachable": True,
            "ready_changed": "2026-12-07T10:00:00Z",
            "unschedulable": False,
            "version": None,
            "boot_id": None,
        },
    ]
    assert microk8s.cluster_check(1) == {"ready": ["k8s-master"], "expected": 1}
    with pytest.raises(CommandExecutionError, match=r"^only 1 of 3 nodes are Ready: k8s-master$"):
        microk8s.cluster_check()


def test_node_health_counts_how_long_each_node_has_not_been_ready_by_its_condition(microk8s):
    # npm run repair's bound: from the Ready condition's lastTransitionTime, by this node's clock.
    kubectl = ("kubectl", "get", "nodes", "-o", "json")
    microk8s.__salt__ = {"cmd.run_all": fake_cli({kubectl: ok(fixture("kubectl-nodes.json"))})}
    membership = importlib.import_module("microk8s._membership")
    now = calendar.timegm((2026, 12, 7, 10, 5, 7, 0, 0, 0))
    assert membership.health(microk8s.__salt__, now=now) == [
        {"name": "k8s-master", "addresses": ["10.1.0.10"], "ready": True, "unreachable": False, "not_ready_seconds": 0},
        {
            "name": "k8s-worker-0",
            "addresses": ["10.1.0.100"],
            "ready": False,
            "unreachable": True,
            "not_ready_seconds": 307,
        },
    ]
    # The module's function counts by the clock now: the worker has been Unknown since the fixture's time.
    assert [node["not_ready_seconds"] >= 307 for node in microk8s.node_health()] == [False, True]
    # A condition without a time (no API server writes one) gives no count, never a guess.
    undated = fixture("kubectl-nodes.json").replace(', "lastTransitionTime": "2026-12-07T10:00:00Z"', "")
    microk8s.__salt__ = {"cmd.run_all": fake_cli({kubectl: ok(undated)})}
    assert [node["not_ready_seconds"] for node in membership.health(microk8s.__salt__, now=now)] == [0, None]


def roles_of(microk8s, settings: dict) -> dict:
    microk8s.__salt__ = {"pillar.get": lambda key, default=None: settings if key == "microk8s" else default}
    return microk8s.node_roles()


def nodes(count: int) -> list[dict]:
    return [{"id": f"n{i}", "address": f"10.1.0.{10 + i}"} for i in range(count)]


def layout(count: int) -> dict:
    """The pillar as Terraform writes it: every node, and the first three (at most) as voters."""
    return {"nodes": nodes(count), "control_plane": [f"n{i}" for i in range(min(3, count))]}


def test_terraforms_first_three_nodes_are_the_control_plane_and_the_rest_workers(microk8s):
    assert roles_of(microk8s, layout(5)) == {
        "master": "n0",
        "control_plane": ["n0", "n1", "n2"],
        "workers": ["n3", "n4"],
        "joiners": {"n1": False, "n2": False, "n3": True, "n4": True},
        "addresses": {f"n{i}": f"10.1.0.{10 + i}" for i in range(5)},
    }
    assert roles_of(microk8s, layout(2))["workers"] == []
    assert roles_of(microk8s, layout(1)) == {
        "master": "n0",
        "control_plane": ["n0"],
        "workers": [],
        "joiners": {},
        "addresses": {"n0": "10.1.0.10"},
    }


def test_the_pillar_may_name_other_voters_and_the_module_counts_none_itself(microk8s):
    explicit = roles_of(microk8s, {"nodes": nodes(4), "master": "n2", "control_plane": ["n3", "n2"]})
    assert (explicit["control_plane"], explicit["workers"]) == (["n2", "n3"], ["n0", "n1"])
    # One voter is what the pillar says, not three: the size has one home, Terraform's layout.
    assert roles_of(microk8s, {"nodes": nodes(4), "control_plane": ["n0"]})["workers"] == ["n1", "n2", "n3"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, r"pillar microk8s:nodes must list every Kubernetes node as \{id, address\}, got None"),
        ({"nodes": [{"id": "n0"}]}, r"pillar microk8s:nodes entries need an id and an address, got \{'id': 'n0'\}"),
        (
            {"nodes": [{"id": "n0", "address": "ten"}]},
            r"pillar microk8s:nodes addresses must be IP addresses, got 'ten'",
        ),
        ({"nodes": nodes(1) * 2}, r"pillar microk8s:nodes ids must be unique, got 'n0'"),
        (
            {"nodes": [*nodes(1), {"id": "n1", "address": "10.1.0.10"}]},
            r"pillar microk8s:nodes addresses must be unique, got '10.1.0.10'",
        ),
        ({"nodes": nodes(2), "control_plane": ["n0", "x"]}, r"microk8s:control_plane may only name ids .*got \['x'\]"),
        ({**layout(4), "master": "n3"}, r"pillar microk8s:master must be one of the control plane .*got 'n3'"),
        ({"nodes": nodes(2)}, r"^pillar microk8s:control_plane must list the node ids of the dqlite voters, got None$"),
        (
            {"nodes": nodes(2), "control_plane": []},
            r"^pillar microk8s:control_plane must list the node ids .*, got \[\]$",
        ),
        (
            {"nodes": nodes(2), "control_plane": "n0"},
            r"^pillar microk8s:control_plane must list the node ids .*, got 'n0'$",
        ),
        (
            {**layout(4), "control_plane_size": 3},
            r"^pillar microk8s:control_plane_size is not read any more; name the voters in microk8s:control_plane, "
            r"got 3$",
        ),
    ],
)
def test_a_bad_pillar_names_the_key_and_the_value(microk8s, settings, message):
    with pytest.raises(CommandExecutionError, match=message):
        roles_of(microk8s, settings)


def test_forget_node_removes_a_departed_worker_or_control_plane_node_once(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER, WORKER])
    urls = master.join_tokens()
    assert cluster.cp_joiner.run("join", urls[CP_JOINER]["urls"][0]).returncode == 0
    assert cluster.worker.run("join", urls[WORKER]["urls"][0], "--worker").returncode == 0
    assert {node["address"] for node in master.nodes()} == {"10.1.0.10", "10.1.0.100", "10.1.0.101"}

    # A worker is only a Kubernetes node; a control-plane node is a dqlite member as well.
    assert master.forget_node("10.1.0.101") is True
    assert {node["address"] for node in master.nodes()} == {"10.1.0.10", "10.1.0.100"}
    assert master.forget_node("10.1.0.100") is True
    assert "10.1.0.100:19001" not in json.dumps(master.members())
    assert {node["address"] for node in master.nodes()} == {"10.1.0.10"}
    # Removing again (a retried destroy) finds nothing.
    assert master.forget_node("10.1.0.101") is False
    assert master.forget_node("10.1.0.100") is False


def voter_joined(microk8s, tmp_path, cp_joiner_ips: list[str] | None = None) -> tuple[Cluster, object]:
    """The fake master with its control-plane joiner joined, and the master's module."""
    cluster = Cluster(microk8s, tmp_path, cp_joiner_ips=cp_joiner_ips)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER])
    assert cluster.cp_joiner.run("join", master.join_tokens()[CP_JOINER]["urls"][0]).returncode == 0
    return cluster, master


def test_a_report_never_removes_a_ready_member_but_scale_down_does(microk8s, tmp_path):
    _, master = voter_joined(microk8s, tmp_path)
    # A healthy voter that misread its membership reports itself as rebuilt: refused.
    with pytest.raises(
        CommandExecutionError,
        match=r"^refusing to remove the dqlite member at 10\.1\.0\.100: its node k8s-worker-0 is Ready",
    ):
        master.renew_join_token(CP_JOINER, "already-known", serial=1)
    assert "10.1.0.100:19001" in json.dumps(master.members())
    # The same node leaving the pillar (scale-down) is removed: the operator said so.
    assert master.forget_node("10.1.0.100") is True
    assert "10.1.0.100:19001" not in json.dumps(master.members())


# remove_node.py finds a dqlite member by its node's *first* InternalIP. A node the cloud
# controller manager initialised lists every fixed IP of its ports (cloud-provider-openstack
# instances_addresses.go nodeAddresses), so a dual-homed node's first InternalIP may be its public
# one: then remove-node --force deletes the Kubernetes node, exits 0 and leaves the member, on
# which the node's rejoin loops ("already known to dqlite").
DUAL_HOMED = ["192.0.2.100", "10.1.0.100"]


def test_a_report_never_removes_a_ready_member_whose_node_lists_another_address_first(microk8s, tmp_path):
    _, master = voter_joined(microk8s, tmp_path, DUAL_HOMED)
    with pytest.raises(
        CommandExecutionError,
        match=r"^refusing to remove the dqlite member at 10\.1\.0\.100: its node k8s-worker-0 is Ready",
    ):
        master.renew_join_token(CP_JOINER, "already-known", serial=1)
    assert "10.1.0.100:19001" in json.dumps(master.members())
    assert [n["addresses"] for n in master.nodes()] == [["10.1.0.10"], DUAL_HOMED]


def test_a_member_whose_node_lists_another_address_first_is_removed_with_its_node(microk8s, tmp_path):
    _, master = voter_joined(microk8s, tmp_path, DUAL_HOMED)
    # Scale-down: the member goes with its node, though remove-node exited 0 with the member left.
    assert master.forget_node("10.1.0.100") is True
    assert "10.1.0.100:19001" not in json.dumps(master.members())
    assert [n["name"] for n in master.nodes()] == ["k8s-master"]


def test_a_rebuilt_nodes_old_member_whose_node_lists_another_address_first_is_removed(microk8s, tmp_path):
    cluster, master = voter_joined(microk8s, tmp_path, DUAL_HOMED)
    # Its machine gone (its kubelet stopped reporting), a new one reports "already known".
    assert cluster.cp_joiner.run("stop").returncode == 0
    assert master.renew_join_token(CP_JOINER, "already-known", serial=1)["forgot"] is True
    assert "10.1.0.100:19001" not in json.dumps(master.members())


ALONE = {"role": "standalone", "members": ["10.1.0.10"]}


@pytest.mark.parametrize(
    ("reports", "issuer"),
    [
        # A new deployment: nobody has reported, or every voter stands alone.
        ({}, MASTER),
        (
            {
                MASTER: {"role": "standalone", "members": ["10.1.0.10"]},
                CP_JOINER: {"role": "standalone", "members": []},
            },
            MASTER,
        ),
        # The cluster runs: the master first.
        ({MASTER: CP, CP_JOINER: CP}, MASTER),
        # The master was rebuilt: it stands alone (or has no microk8s yet), the voter is in the cluster.
        ({MASTER: {"role": "standalone", "members": ["10.1.0.10"]}, CP_JOINER: CP}, CP_JOINER),
        ({CP_JOINER: CP}, CP_JOINER),
        # The master's report from before the cluster formed (the mine is updated once per
        # orchestration): it names the cluster's CA, so it is stale, not a rebuilt master.
        ({MASTER: {**ALONE, "ca": "ca-of-the-cluster"}, CP_JOINER: CP}, MASTER),
        # Rebuilt and installed, but not joined: a CA of its own.
        ({MASTER: {**ALONE, "ca": "ca-of-a-new-install"}, CP_JOINER: CP}, CP_JOINER),
        # A voter whose cluster does not list it is not in the cluster; neither is an error text.
        (
            {
                MASTER: "microk8s.membership is not available",
                CP_JOINER: {"role": "control-plane", "members": ["10.9.0.1", "10.9.0.2"]},
            },
            MASTER,
        ),
    ],
)
def test_the_issuer_is_the_first_voter_in_the_cluster_else_the_master(microk8s, reports, issuer):
    asked = []
    microk8s.__salt__ = {
        "pillar.get": lambda key, default=None: PILLAR if key == "microk8s" else default,
        "mine.get": lambda target, function, tgt_type="glob": asked.append((target, function, tgt_type)) or reports,
    }
    assert microk8s.issuer() == issuer
    assert asked == [(f"{MASTER},{CP_JOINER}", "microk8s.membership", "list")]
