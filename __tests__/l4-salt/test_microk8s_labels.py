"""
The microk8s module's _labels: each node's labels and taints from the pillar, checked as
Kubernetes checks them, applied with the annotations that record which ones kube-on-os manages.
"""

from __future__ import annotations

import importlib
import json

import pytest
from microk8s_support import CP_JOINER, MASTER, PILLAR, WORKER, Cluster, fake_cli, joined_cluster, ok
from salt.exceptions import CommandExecutionError


def plan_of(master, address: str, labels: dict, taints: list) -> dict:
    """_labels.plan: what label_node would change on the node at ``address``."""
    return importlib.import_module("microk8s._labels").plan(master.__salt__, address, labels, taints)


def metadata_of(cluster: Cluster, name: str) -> dict:
    """The node's labels, annotations and taints as the fake's kubectl shows them."""
    node = json.loads(cluster.master.run("kubectl", "get", "node", name, "-o", "json").stdout)
    return {**node["metadata"], "taints": node["spec"].get("taints", [])}


def test_a_nodes_labels_taints_and_managed_ones_are_parsed_from_kubectl_get_node(microk8s):
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "k8s-worker-1",
            "labels": {"kubernetes.io/hostname": "k8s-worker-1", "kube-on-os/pool": "gpu"},
            "annotations": {
                "kube-on-os/managed-labels": '["kube-on-os/pool"]',
                "kube-on-os/managed-taints": '["gpu=true:NoSchedule"]',
                "node.alpha.kubernetes.io/ttl": "0",
            },
        },
        "spec": {
            "taints": [
                {"key": "gpu", "value": "true", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2026-11-26T09:00:00Z"},
            ]
        },
    }
    labels = importlib.import_module("microk8s._labels")
    assert labels.parse_node(json.dumps(node)) == {
        "name": "k8s-worker-1",
        "labels": {"kubernetes.io/hostname": "k8s-worker-1", "kube-on-os/pool": "gpu"},
        "taints": ["gpu=true:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"],
        "managed": {"labels": ["kube-on-os/pool"], "taints": ["gpu=true:NoSchedule"]},
    }
    # A node kube-on-os never labelled manages nothing.
    bare = labels.parse_node(json.dumps({"kind": "Node", "metadata": {"name": "k8s-master"}, "spec": {}}))
    assert bare == {"name": "k8s-master", "labels": {}, "taints": [], "managed": {"labels": [], "taints": []}}


@pytest.mark.parametrize(
    "text",
    ["", "null", "[]", '{"kind": "NodeList", "items": []}', '{"kind": "Node", "metadata": {"labels": []}}', "{oops"],
)
def test_anything_but_a_node_is_an_error_not_a_type_error(microk8s, text):
    labels = importlib.import_module("microk8s._labels")
    with pytest.raises(CommandExecutionError, match=r"^kubectl get node printed no Node"):
        labels.parse_node(text)


def test_a_worker_cannot_read_nodes_and_a_bad_annotation_says_how_to_clear_it(microk8s):
    labels = importlib.import_module("microk8s._labels")
    refusal = (
        "This MicroK8s deployment is acting as a node in a cluster. Please use the microk8s kubectl on the master.\n"
    )
    with pytest.raises(CommandExecutionError, match=r"^this node joined with --worker and cannot read nodes"):
        labels.parse_node(refusal)
    node = {"kind": "Node", "metadata": {"name": "n", "annotations": {"kube-on-os/managed-labels": "pool"}}}
    with pytest.raises(CommandExecutionError) as raised:
        labels.parse_node(json.dumps(node))
    assert str(raised.value) == (
        "node n's annotation kube-on-os/managed-labels is not a JSON list of strings: 'pool'; "
        "remove it (kubectl annotate node n kube-on-os/managed-labels-) and apply again"
    )


@pytest.mark.parametrize(
    ("labels", "taints", "message"),
    [
        ({"kube-on-os/pool": "has space"}, [], "label kube-on-os/pool's value 'has space' must be empty or at most 63"),
        ({"kube-on-os/pool": True}, [], "label kube-on-os/pool's value True must be a string (quote it in YAML)"),
        ({"-pool": "a"}, [], "label key '-pool' name part must be 1 to 63 alphanumeric characters"),
        ({"Example.com/pool": "a"}, [], "label key 'Example.com/pool' prefix part must be a lower-case DNS subdomain"),
        ({"a/b/c": "a"}, [], "label key 'a/b/c' may hold at most one '/'"),
        ({"pool": "a\n"}, [], "label pool's value 'a\\n' must be empty or at most 63"),
        ({}, ["gpu=true"], "taint 'gpu=true' must be key=value:Effect or key:Effect"),
        ({}, ["gpu=true:Never"], "taint 'gpu=true:Never' has effect 'Never'; it must be one of NoSchedule, "),
        ({}, ["gpu=a=b:NoSchedule"], "taint 'gpu=a=b:NoSchedule' must be key=value:Effect or key:Effect"),
        ({}, ["g pu:NoSchedule"], "taint 'g pu:NoSchedule': key name part must be 1 to 63"),
        ({}, ["gpu=x y:NoSchedule"], "taint 'gpu=x y:NoSchedule': value must be empty or at most 63"),
        ({}, ["gpu:NoSchedule", "gpu=1:NoSchedule"], "two taints with key gpu and effect NoSchedule"),
        ({}, [3], "a taint must be a string key=value:Effect or key:Effect, got 3"),
        ([], [], "labels must be a map of label keys to values, got []"),
        ({}, "gpu:NoSchedule", "taints must be a list of key=value:Effect, got 'gpu:NoSchedule'"),
    ],
)
def test_pillar_labels_and_taints_are_checked_as_kubernetes_checks_them_naming_the_node(
    microk8s, labels, taints, message
):
    nodes = [{**PILLAR["nodes"][0], "labels": labels, "taints": taints}, *PILLAR["nodes"][1:]]
    # Checked before any kubectl: the plan has no cmd.run_all to call.
    microk8s.__salt__ = {"pillar.get": lambda key, default=None: {**PILLAR, "nodes": nodes}}
    with pytest.raises(CommandExecutionError) as raised:
        microk8s.label_plan()
    assert str(raised.value).startswith(f"pillar microk8s:nodes entry {MASTER}: {message}")


def test_the_pillars_labels_and_taints_an_older_pillar_has_none(microk8s):
    nodes = [
        {**PILLAR["nodes"][0], "labels": {"kube-on-os/pool": "default"}, "taints": []},
        {**PILLAR["nodes"][1], "labels": {}, "taints": None},
        {
            **PILLAR["nodes"][2],
            "labels": {"kube-on-os/pool": "gpu"},
            "taints": ["gpu=true:NoSchedule", "spot:NoExecute"],
        },
    ]
    pillar_nodes = importlib.import_module("microk8s._labels").pillar_nodes
    assert pillar_nodes({"pillar.get": lambda key, default=None: {**PILLAR, "nodes": nodes}}) == {
        MASTER: {"address": "10.1.0.10", "labels": {"kube-on-os/pool": "default"}, "taints": []},
        CP_JOINER: {"address": "10.1.0.100", "labels": {}, "taints": []},
        WORKER: {
            "address": "10.1.0.101",
            "labels": {"kube-on-os/pool": "gpu"},
            "taints": ["gpu=true:NoSchedule", "spot:NoExecute"],
        },
    }
    assert pillar_nodes({"pillar.get": lambda key, default=None: PILLAR}) == {
        node["id"]: {"address": node["address"], "labels": {}, "taints": []} for node in PILLAR["nodes"]
    }


def test_labels_and_taints_are_applied_recorded_and_a_second_run_changes_nothing(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    before = metadata_of(cluster, "k8s-worker-1")
    labels, taints = {"kube-on-os/pool": "gpu", "gpu": "a100"}, ["gpu=true:NoSchedule"]
    plan = plan_of(master, "10.1.0.101", labels, taints)
    assert plan == {
        "node": "k8s-worker-1",
        "label": {"kube-on-os/pool": "gpu", "gpu": "a100"},
        "unlabel": [],
        "taint": ["gpu=true:NoSchedule"],
        "untaint": [],
        "annotate": {
            "kube-on-os/managed-labels": '["gpu", "kube-on-os/pool"]',
            "kube-on-os/managed-taints": '["gpu=true:NoSchedule"]',
        },
        "changed": True,
        "old": {"labels": {}, "taints": []},
        "new": {"labels": {"gpu": "a100", "kube-on-os/pool": "gpu"}, "taints": ["gpu=true:NoSchedule"]},
    }
    # Planning is read-only.
    assert metadata_of(cluster, "k8s-worker-1") == before
    assert master.label_node("10.1.0.101", labels, taints) == {
        "node": "k8s-worker-1",
        "changed": True,
        "old": plan["old"],
        "new": plan["new"],
    }
    after = metadata_of(cluster, "k8s-worker-1")
    assert after["labels"] == {**before["labels"], "kube-on-os/pool": "gpu", "gpu": "a100"}
    assert after["annotations"] == plan["annotate"]
    assert after["taints"] == [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    assert master.node_metadata("10.1.0.101")["managed"] == {
        "labels": ["gpu", "kube-on-os/pool"],
        "taints": ["gpu=true:NoSchedule"],
    }
    # Again: nothing to do, and no kubectl but the read.
    calls = len(cluster.master.logged)
    assert plan_of(master, "10.1.0.101", labels, taints)["changed"] is False
    assert master.label_node("10.1.0.101", labels, taints) == {
        "node": "k8s-worker-1",
        "changed": False,
        "old": plan["new"],
        "new": plan["new"],
    }
    assert [c for c in cluster.master.logged[calls:] if "kubectl get node " not in c] == [
        "microk8s kubectl get nodes -o json",
        "microk8s kubectl get nodes -o json",
    ]


def test_only_what_kube_on_os_set_is_removed_and_a_changed_taint_replaces_the_old(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    run = cluster.master.run
    # Someone else's: a zone label (the cloud controller manager's) and a taint, set by hand.
    assert run("kubectl", "label", "node", "k8s-worker-1", "topology.kubernetes.io/zone=nova").returncode == 0
    assert run("kubectl", "taint", "node", "k8s-worker-1", "maintenance=soon:PreferNoSchedule").returncode == 0
    master.label_node(
        "10.1.0.101", {"kube-on-os/pool": "gpu", "gpu": "a100"}, ["gpu=true:NoSchedule", "spot:NoExecute"]
    )
    unmanaged = {
        k: v for k, v in metadata_of(cluster, "k8s-worker-1")["labels"].items() if k not in ("gpu", "kube-on-os/pool")
    }
    # The pillar drops a label and a taint and changes the other taint's value and effect.
    plan = plan_of(master, "10.1.0.101", {"kube-on-os/pool": "gpu"}, ["gpu=false:NoExecute"])
    assert {part: plan[part] for part in ("label", "unlabel", "taint", "untaint", "annotate")} == {
        "label": {},
        "unlabel": ["gpu"],
        "taint": ["gpu=false:NoExecute"],
        "untaint": ["gpu:NoSchedule", "spot:NoExecute"],
        "annotate": {
            "kube-on-os/managed-labels": '["kube-on-os/pool"]',
            "kube-on-os/managed-taints": '["gpu=false:NoExecute"]',
        },
    }
    assert plan["old"] == {
        "labels": {"gpu": "a100", "kube-on-os/pool": "gpu"},
        "taints": ["gpu=true:NoSchedule", "spot:NoExecute"],
    }
    assert master.label_node("10.1.0.101", {"kube-on-os/pool": "gpu"}, ["gpu=false:NoExecute"])["changed"] is True
    after = metadata_of(cluster, "k8s-worker-1")
    assert after["labels"] == {**unmanaged, "kube-on-os/pool": "gpu"}
    assert after["labels"]["topology.kubernetes.io/zone"] == "nova"
    assert after["taints"] == [
        {"key": "gpu", "value": "false", "effect": "NoExecute"},
        {"key": "maintenance", "value": "soon", "effect": "PreferNoSchedule"},
    ]
    # Nothing wanted any more: the managed ones go, the annotations too; the others stay.
    assert master.label_node("10.1.0.101", {}, [])["changed"] is True
    final = metadata_of(cluster, "k8s-worker-1")
    assert final["labels"] == unmanaged
    assert "annotations" not in final
    assert final["taints"] == [{"key": "maintenance", "value": "soon", "effect": "PreferNoSchedule"}]
    assert plan_of(master, "10.1.0.101", {}, [])["changed"] is False


def test_a_label_someone_removed_by_hand_is_not_removed_again_and_a_missing_taint_is_not_untainted(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.label_node("10.1.0.100", {"a": "1", "b": "2"}, ["t:NoSchedule", "u:NoSchedule"])
    assert cluster.master.run("kubectl", "label", "node", "k8s-worker-0", "b-").returncode == 0
    assert cluster.master.run("kubectl", "taint", "node", "k8s-worker-0", "u:NoSchedule-").returncode == 0
    plan = plan_of(master, "10.1.0.100", {"a": "1"}, ["t:NoSchedule"])
    # kubectl taint fails on a taint the node lacks (deleteTaints): only present ones are removed.
    assert (plan["unlabel"], plan["untaint"], plan["label"], plan["taint"]) == ([], [], {}, [])
    assert master.label_node("10.1.0.100", {"a": "1"}, ["t:NoSchedule"])["changed"] is True
    assert master.node_metadata("10.1.0.100")["managed"] == {"labels": ["a"], "taints": ["t:NoSchedule"]}


def test_the_dual_homed_master_is_labelled_by_its_host_name(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path, master_address="192.0.2.10")
    master = cluster.as_master()
    assert master.label_node("10.1.0.10", {"kube-on-os/pool": "default"}, [])["node"] == "k8s-master"
    assert metadata_of(cluster, "k8s-master")["labels"]["kube-on-os/pool"] == "default"


def test_labelling_fails_naming_the_address_or_the_failing_kubectl(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    with pytest.raises(CommandExecutionError, match=r"^Kubernetes has no node at 10\.1\.0\.199$"):
        master.label_node("10.1.0.199", {"kube-on-os/pool": "default"}, [])
    with pytest.raises(CommandExecutionError, match=r"^the node at 10\.1\.0\.101: taint 'x:Sometimes' has effect"):
        plan_of(master, "10.1.0.101", {}, ["x:Sometimes"])
    # The API server refusing the write (its datastore down, say) is kubectl's own line.
    outputs = {
        ("kubectl", "get", "nodes", "-o", "json"): ok(
            cluster.master.run("kubectl", "get", "nodes", "-o", "json").stdout
        ),
        ("kubectl", "get", "node", "k8s-worker-1", "-o", "json"): ok(
            cluster.master.run("kubectl", "get", "node", "k8s-worker-1", "-o", "json").stdout
        ),
    }
    master.__salt__ = {**master.__salt__, "cmd.run_all": fake_cli(outputs)}
    with pytest.raises(CommandExecutionError) as raised:
        master.label_node("10.1.0.101", {"kube-on-os/pool": "gpu"}, [])
    assert str(raised.value).startswith(
        "microk8s kubectl label node k8s-worker-1 kube-on-os/pool=gpu --overwrite failed (exit 1): unexpected"
    )


def test_on_a_worker_labelling_is_refused_naming_the_control_plane(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    worker = cluster.as_master(minion_id=WORKER, node=cluster.worker)
    with pytest.raises(CommandExecutionError, match=r"^this node joined with --worker and cannot list nodes"):
        worker.label_node("10.1.0.101", {"kube-on-os/pool": "gpu"}, [])


def test_the_plan_for_every_pillar_node_reads_kubectl_once_and_names_a_node_kubernetes_lacks(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    nodes = [
        {**PILLAR["nodes"][0], "labels": {"kube-on-os/pool": "default"}, "taints": []},
        {**PILLAR["nodes"][1], "labels": {"kube-on-os/pool": "default"}, "taints": []},
        {**PILLAR["nodes"][2], "labels": {"kube-on-os/pool": "gpu"}, "taints": ["gpu=true:NoSchedule"]},
    ]
    master = cluster.as_master(pillar={"microk8s": {**PILLAR, "nodes": nodes}})
    master.label_node("10.1.0.100", {"kube-on-os/pool": "default"}, [])
    calls = len(cluster.master.logged)
    plans = master.label_plan()
    assert cluster.master.logged[calls:] == ["microk8s kubectl get nodes -o json"]
    assert {node: (plan["address"], plan["node"], plan["changed"]) for node, plan in plans.items()} == {
        MASTER: ("10.1.0.10", "k8s-master", True),
        CP_JOINER: ("10.1.0.100", "k8s-worker-0", False),
        WORKER: ("10.1.0.101", "k8s-worker-1", True),
    }
    assert plans[WORKER] == {
        "address": "10.1.0.101",
        **plan_of(master, "10.1.0.101", {"kube-on-os/pool": "gpu"}, ["gpu=true:NoSchedule"]),
    }
    gone = [*nodes, {"id": "k8s-worker-2.lab.example", "address": "10.1.0.102"}]
    master = cluster.as_master(pillar={"microk8s": {**PILLAR, "nodes": gone}})
    with pytest.raises(CommandExecutionError, match=r"^Kubernetes has no node at 10\.1\.0\.102 \(k8s-worker-2"):
        master.label_plan()


def test_an_older_pillar_without_labels_or_taints_plans_nothing_and_labelling_writes_nothing(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    plans = master.label_plan()
    assert {node: plan["changed"] for node, plan in plans.items()} == {MASTER: False, CP_JOINER: False, WORKER: False}
    assert plans[WORKER]["old"] == plans[WORKER]["new"] == {"labels": {}, "taints": []}
    assert master.label_node("10.1.0.101")["changed"] is False
    assert not [call for call in cluster.master.logged if call.split()[2:3] in (["label"], ["taint"], ["annotate"])]
