"""
L4: the real Salt renders every role's highstate from our salt/ and pillar/, with a pillar that
Terraform's data produced, in a masterless minion confined to a temporary directory.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest
import yaml
from harness import salt_commands
from harness.layout import DOMAIN, LAB, PRIVATE_CIDR, PUBLIC_CIDR
from harness.salt_cluster import from_terraform_sls
from harness.salt_minion import ROOT, LocalMinion
from salt.utils.functools import call_function

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHhU0xQm2c2RZkzC9M7tRrFSe0Q5sQm8l8S3ZzQxYw1a waldorf@example"


def as_tf_var(value) -> str:
    """
    A TF_VAR_ value that Terraform reads back as ``value``: it parses complex values as HCL, of
    which JSON is a part, except that `%{` and `${` start templates there and are escaped.
    """
    return json.dumps(value, ensure_ascii=False).replace("%{", "%%{").replace("${", "$${")


def terraform_pillar(users: list[dict]) -> str:
    """
    The _from_terraform.sls Terraform writes, byte for byte, for the stack synthesized with these
    TF_VAR_ values: applied against the OpenStack API double and evaluated from the state
    (__tests__/support/terraform-pillar.ts), names, addresses and control plane included.
    """
    env = {
        **os.environ,
        "TF_VAR_deploy_domain_name": DOMAIN,
        "TF_VAR_users": as_tf_var(users),
        "TF_VAR_num_kube_nodes": "3",
    }
    script = ROOT / "__tests__" / "support" / "terraform-pillar.ts"
    result = subprocess.run(
        ["node", "--require", str(ROOT / "scripts" / "register-ts.js"), str(script)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="session")
def pillar_sls() -> str:
    return terraform_pillar([{"username": "waldorf", "ssh_public_key": KEY}])


@pytest.fixture(scope="session")
def pillar_data(pillar_sls) -> dict:
    return yaml.safe_load(pillar_sls)


class Minion(LocalMinion):
    """
    A masterless minion with our salt/ tree and a copy of pillar/ plus _from_terraform.sls: the
    text Terraform wrote, or a test's own values written the way Terraform writes them.
    """

    # A highstate is a function of the minion's id, pillar and grains alone (salt/ and pillar/
    # do not change while the tests run): the tests that render the same minion share one
    # rendering, two salt-call runs, and each gets its own copy.
    _highstates: ClassVar[dict[str, dict]] = {}

    def __init__(
        self,
        root: Path,
        minion_id: str,
        pillar: dict | str,
        grains: dict | None = None,
        extra_pillar: dict | None = None,
    ):
        pillar_root = root / "pillar"
        shutil.copytree(ROOT / "pillar", pillar_root)
        text = pillar if isinstance(pillar, str) else from_terraform_sls(pillar)
        (pillar_root / "_from_terraform.sls").write_text(text)
        for relative, content in (extra_pillar or {}).items():
            target = pillar_root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"#!yaml\n{yaml.safe_dump(content)}")
        super().__init__(root, minion_id, file_root=ROOT / "salt", pillar_root=pillar_root, grains=grains)
        self.inputs = json.dumps([minion_id, text, grains, extra_pillar], sort_keys=True)

    def highstate(self) -> dict:
        if self.inputs not in Minion._highstates:
            self.call("saltutil.sync_all")
            Minion._highstates[self.inputs] = self.call("state.show_highstate")
        return copy.deepcopy(Minion._highstates[self.inputs])


# Every host runs core and file_transfer (the user's own files, where the pillar names the host).
EVERY_HOST = {"core", "file_transfer"}
# A Kubernetes node's states; microk8s.master only includes them (joined, kubelet, the microk8s
# SLS, tokens) and has no state of its own.
NODE = EVERY_HOST | {"microk8s", "microk8s.joined", "microk8s.kubelet", "microk8s.tokens"}
ROLES = {
    LAB.salt_master.name: EVERY_HOST | {"salt_master"},
    LAB.bastion.name: EVERY_HOST | {"bastion"},
    # A dqlite voter (microk8s:control_plane), the master among them, runs an API server too.
    LAB.master.name: NODE | {"microk8s.apiserver"},
    LAB.worker(0).name: NODE | {"microk8s.apiserver"},
    # A node pool's worker (node_pools): a worker, no API server.
    LAB.pool_worker_name("gpu", 0): NODE,
}
BASTION_GRAINS = {
    "ip4_interfaces": {"lo": ["127.0.0.1"], "ens4": [LAB.bastion.address], "ens3": [LAB.bastion.public_address]}
}


def sls_of(highstate: dict) -> set[str]:
    return {state["__sls__"] for state in highstate.values()}


def args_of(state: dict, function: str) -> dict:
    """The keyword arguments of a state's function, as one dict."""
    module = function.split(".")[0]
    merged: dict = {}
    for item in state[module]:
        if isinstance(item, dict):
            merged.update(item)
    return merged


def roles_of(highstate: dict) -> set[str]:
    """The top.sls entries a highstate came from: core.* is core, microk8s' parts are microk8s."""
    parts = {
        "core.": "core",
        "bastion.": "bastion",
        "microk8s.install": "microk8s",
        "microk8s.certificates": "microk8s",
        "microk8s.addons": "microk8s",
    }
    return {next((role for prefix, role in parts.items() if sls.startswith(prefix)), sls) for sls in sls_of(highstate)}


@pytest.mark.parametrize("host", sorted(ROLES))
def test_each_role_renders_exactly_its_states(tmp_path, pillar_data, host):
    minion = Minion(tmp_path, f"{host}.{DOMAIN}", pillar_data, grains=BASTION_GRAINS if host == "bastion" else None)
    assert roles_of(minion.highstate()) == ROLES[host]


@pytest.mark.parametrize("host", sorted(ROLES))
def test_a_watching_service_is_enabled_by_a_state_of_its_own(tmp_path, pillar_data, host):
    # Salt runs a watching state's mod_watch only when the state itself changed nothing, so a
    # service.running that also enables its service skips the restart on the run that enables
    # it: the rehearsal's first apply left salt-master without its reactor this way.
    minion = Minion(tmp_path, f"{host}.{DOMAIN}", pillar_data, grains=BASTION_GRAINS if host == "bastion" else None)
    highstate = minion.highstate()
    services = {k: v for k, v in highstate.items() if "service" in v}
    enabled = {args_of(v, "service.enabled")["name"] for v in services.values() if "enabled" in v["service"]}
    watching = [args_of(v, "service.running") for v in services.values() if "running" in v["service"]]
    watching = [args for args in watching if args.get("watch")]
    assert [args["name"] for args in watching if "enable" in args] == []
    assert {args["name"] for args in watching} <= enabled
    if host in ("salt", "bastion"):
        assert watching != []


@pytest.mark.parametrize("host", sorted(ROLES))
def test_core_minion_writes_the_minion_options_and_restarts_the_minion_only_when_they_change(
    tmp_path, pillar_data, host
):
    minion = Minion(tmp_path, f"{host}.{DOMAIN}", pillar_data, grains=BASTION_GRAINS if host == "bastion" else None)
    highstate = minion.highstate()
    config = args_of(highstate["core-minion-config-file-managed"], "file.managed")
    assert (config["name"], config["source"], config["makedirs"]) == (
        "/etc/salt/minion.d/kube-on-os.conf",
        "salt://core/files/minion.conf",
        True,
    )
    # The every-second status.master a master restart left behind goes, with its saved copy.
    assert args_of(highstate["core-minion-master-alive-schedule-absent"], "schedule.absent")["name"] == (
        "__master_alive_salt"
    )
    # salt-minion reads its options when it starts: it restarts, in the background, once the job
    # has returned (kube_on_os.restart_minion), and only when the file changed.
    restart = args_of(highstate["core-minion-restarted"], "module.run")
    assert "run" in highstate["core-minion-restarted"]["module"]
    assert (restart["kube_on_os.restart_minion"], restart["onchanges"]) == (
        [],
        [{"file": "core-minion-config-file-managed"}],
    )


def test_orchestration_gives_every_minion_its_options_and_waits_until_each_runs_with_them(tmp_path, pillar_data):
    orch = Minion(tmp_path, f"salt.{DOMAIN}", pillar_data).call("state.show_sls", "orch.deploy")
    config = args_of(orch["orch-deploy-salt-state-minion-config"], "salt.state")
    assert (config["tgt"], config["sls"]) == ("*", "core.minion")
    # The options are core/files/minion.conf's, read once, so the check cannot drift from the file.
    options = yaml.safe_load((ROOT / "salt" / "core" / "files" / "minion.conf").read_text())
    # autoload_dynamic_modules off: a highstate syncs nothing itself, so orch.deploy's first step
    # syncs every minion's custom modules (test_orchestration_syncs_every_minion_first below).
    # rejected_retry: a replaced machine's minion denied before its old key went asks again.
    assert options == {
        "zmq_monitor": False,
        "lazy_loader_strict_matching": True,
        "autoload_dynamic_modules": False,
        "rejected_retry": True,
    }
    check = args_of(orch["orch-deploy-salt-function-minion-options"], "salt.function")
    assert (check["name"], check["tgt"], check["arg"]) == ("kube_on_os.minion_options", "*", [options])
    # A restarting minion does not answer: the check is tried again, 40 times 5 s apart at most.
    assert check["retry"] == {"attempts": 40, "interval": 5}


def test_orch_minions_gives_every_minion_its_options_as_orch_deploy_begins(tmp_path, pillar_data):
    # orchestrate.sh runs orch.minions before a Salt master configuration change restarts the master.
    minion = Minion(tmp_path, f"salt.{DOMAIN}", pillar_data)
    deploy = minion.call("state.show_sls", "orch.deploy")
    minions = minion.call("state.show_sls", "orch.minions")
    steps = ["salt-function-sync-all", "salt-state-minion-config", "salt-function-minion-options"]
    assert sorted(minions) == sorted(f"orch-minions-{step}" for step in steps)

    def without_ids(step: dict) -> str:
        return json.dumps({key: value for key, value in step.items() if key != "__sls__"}, sort_keys=True).replace(
            "orch-minions-", "orch-deploy-"
        )

    assert [without_ids(minions[f"orch-minions-{step}"]) for step in steps] == [
        without_ids(deploy[f"orch-deploy-{step}"]) for step in steps
    ]
    assert args_of(minions["orch-minions-salt-function-sync-all"], "salt.function")["tgt"] == "*"


def test_orchestration_syncs_every_minion_first_so_that_no_highstate_needs_to(tmp_path, pillar_data):
    # The minions run with autoload_dynamic_modules off (core/files/minion.conf): a highstate
    # finds the custom modules only as the last sync left them.
    orch = Minion(tmp_path, f"salt.{DOMAIN}", with_nodes(pillar_data, 5)).call("state.show_sls", "orch.deploy")
    sync = "orch-deploy-salt-function-sync-all"
    synced = args_of(orch[sync], "salt.function")
    assert (synced["name"], synced["tgt"]) == ("saltutil.sync_all", "*")
    assert requires(orch[sync]) == []

    def after_sync(step: str) -> bool:
        return any(r["salt"] == sync or after_sync(r["salt"]) for r in requires(orch[step]))

    states = [step for step in orch if step.startswith("orch-deploy-salt-state-")]
    assert len(states) >= 8
    assert [step for step in states if not after_sync(step)] == []


def with_nodes(pillar_data: dict, count: int) -> dict:
    """The pillar as Terraform writes it for ``count`` Kubernetes nodes: the first three are voters."""
    nodes = [{"id": node.fqdn, "address": node.address} for node in LAB.kube_nodes(count)]
    control_plane = [node.fqdn for node in LAB.control_plane(count)]
    return {**pillar_data, "microk8s": {**pillar_data["microk8s"], "nodes": nodes, "control_plane": control_plane}}


def test_the_harness_lays_out_the_nodes_as_terraform_does(pillar_data):
    # harness.layout reads the layout's facts from facts/ and config/parameters.ts, and
    # combines them again in Python for the Salt tests' clusters: held here to what Terraform wrote.
    settings = pillar_data["microk8s"]
    assert [(node["id"], node["address"]) for node in settings["nodes"]] == [
        (node.fqdn, node.address) for node in LAB.kube_nodes(3)
    ]
    assert (settings["master"], settings["control_plane"]) == (
        LAB.master.fqdn,
        [node.fqdn for node in LAB.control_plane(3)],
    )
    network = pillar_data["network"]
    assert (network["public_cidr"], network["private_cidr"]) == (PUBLIC_CIDR, PRIVATE_CIDR)


def requires(step: dict) -> list:
    return [r for item in step["salt"] if isinstance(item, dict) for r in item.get("require", [])]


@pytest.mark.parametrize(
    ("count", "steps"),
    [
        (1, []),
        (2, ["control-plane"]),
        (3, ["control-plane"]),
        (5, ["control-plane", "workers"]),
    ],
)
def test_orchestration_joins_voters_one_at_a_time_then_workers_in_batches(tmp_path, pillar_data, count, steps):
    orch = Minion(tmp_path, f"salt.{DOMAIN}", with_nodes(pillar_data, count)).call("state.show_sls", "orch.deploy")
    order = [
        "orch-deploy-salt-function-sync-all",
        # Every minion takes core.minion's options, and each runs with them before the rest: no
        # restart ends another step's job.
        "orch-deploy-salt-state-minion-config",
        "orch-deploy-salt-function-minion-options",
        "orch-deploy-salt-state-salt-master",
        "orch-deploy-salt-function-refresh-pillar",
        "orch-deploy-salt-function-mine-update",
        "orch-deploy-salt-state-bastion-and-master",
        # New nodes install microk8s:channel only into a cluster that runs that release.
        "orch-deploy-salt-function-release-check",
        *(f"orch-deploy-salt-state-{step}" for step in steps),
        "orch-deploy-salt-state-spent-tokens",
        # Right after the joins, every node's providerID (a no-op without openstack:cloud).
        "orch-deploy-salt-state-provider-ids",
        "orch-deploy-salt-function-cluster-check",
        # A node drained before its machine was replaced is back in service once Ready.
        "orch-deploy-salt-function-uncordon-replaced",
        # Once every node is Ready, the master labels and taints them all.
        "orch-deploy-salt-state-node-labels",
        # Then it applies the cloud integration (a no-op where its pillar has no openstack:cloud).
        "orch-deploy-salt-state-cloud-provider",
    ]
    # Salt fails a batched step that targets no minion (test_real_salt.py shows it): none is there.
    assert sorted(orch) == sorted(order)
    for before, after in itertools.pairwise(order):
        assert {"salt": before} in requires(orch[after]), f"{after} must require {before}"
    if "control-plane" in steps:
        # dqlite takes one new voter at a time (microk8s#4696, #2348): a batch of one, named by id.
        voters = args_of(orch["orch-deploy-salt-state-control-plane"], "salt.state")
        assert (voters["tgt"], voters["tgt_type"], voters["batch"]) == (
            ",".join(f"k8s-worker-{i}.{DOMAIN}" for i in range(min(count, 3) - 1)),
            "list",
            1,
        )
    if "workers" in steps:
        workers = args_of(orch["orch-deploy-salt-state-workers"], "salt.state")
        assert (workers["tgt"], workers["tgt_type"], workers["batch"]) == (
            f"k8s-worker-2.{DOMAIN},k8s-worker-3.{DOMAIN}",
            "list",
            "25%",
        )
    # The check counts microk8s:nodes itself, so the orchestration passes no number to drift.
    assert "arg" not in args_of(orch["orch-deploy-salt-function-cluster-check"], "salt.function")
    # Each drainer puts back its own: the master, and the next voter, which drains the master.
    uncordon = args_of(orch["orch-deploy-salt-function-uncordon-replaced"], "salt.function")
    assert (uncordon["name"], uncordon["tgt"], uncordon["tgt_type"]) == (
        "microk8s.uncordon_replaced",
        f"k8s-master.{DOMAIN}" + (f",k8s-worker-0.{DOMAIN}" if count > 1 else ""),
        "list",
    )
    # microk8s_channel unset (its default): the master checks against the channel it tracks.
    assert pillar_data["microk8s"]["channel"] is None
    release = args_of(orch["orch-deploy-salt-function-release-check"], "salt.function")
    assert (release["name"], release["tgt"], release.get("arg")) == (
        "microk8s.release_check",
        f"k8s-master.{DOMAIN}",
        None,
    )


def test_after_a_replacement_only_the_new_machines_are_synced_and_highstated_with_the_master(tmp_path, pillar_data):
    # orchestrate.sh passes orchestration:replaced when the apply replaced machines and changed
    # nothing else: the bastion's, a voter's and a worker's here.
    replaced = [f"bastion.{DOMAIN}", f"k8s-worker-0.{DOMAIN}", f"k8s-worker-3.{DOMAIN}"]
    pillar = {**with_nodes(pillar_data, 5), "orchestration": {"replaced": replaced}}
    orch = Minion(tmp_path, f"salt.{DOMAIN}", pillar).call("state.show_sls", "orch.deploy")
    only_them = {"tgt": ",".join(replaced), "tgt_type": "list"}
    for step, function in [
        ("orch-deploy-salt-function-sync-all", "salt.function"),
        ("orch-deploy-salt-state-minion-config", "salt.state"),
        ("orch-deploy-salt-function-minion-options", "salt.function"),
    ]:
        args = args_of(orch[step], function)
        assert {key: args.get(key) for key in only_them} == only_them, step
    # Every other minion already runs this tree with this pillar: no Salt master highstate, and
    # the master (which issues the join tokens) highstated with the new machines alone.
    assert "orch-deploy-salt-state-salt-master" not in orch
    assert {"salt": "orch-deploy-salt-function-minion-options"} in requires(
        orch["orch-deploy-salt-function-refresh-pillar"]
    )
    first = args_of(orch["orch-deploy-salt-state-bastion-and-master"], "salt.state")
    assert (first["tgt"], first["tgt_type"]) == (f"k8s-master.{DOMAIN},bastion.{DOMAIN}", "list")
    voters = args_of(orch["orch-deploy-salt-state-control-plane"], "salt.state")
    workers = args_of(orch["orch-deploy-salt-state-workers"], "salt.state")
    assert (voters["tgt"], voters["batch"], workers["tgt"]) == (f"k8s-worker-0.{DOMAIN}", 1, f"k8s-worker-3.{DOMAIN}")
    # The master-side steps after the joins are the whole run's: every voter retracts its tokens.
    tokens = args_of(orch["orch-deploy-salt-state-spent-tokens"], "salt.state")
    assert tokens["tgt"] == ",".join([f"k8s-master.{DOMAIN}", f"k8s-worker-0.{DOMAIN}", f"k8s-worker-1.{DOMAIN}"])
    assert {"orch-deploy-salt-state-node-labels", "orch-deploy-salt-state-cloud-provider"} <= set(orch)


@pytest.mark.parametrize("new", ["k8s-master", "salt"])
def test_a_new_kubernetes_master_or_salt_master_takes_the_whole_orchestration(tmp_path, pillar_data, new):
    pillar = {
        **with_nodes(pillar_data, 5),
        "orchestration": {"replaced": [f"{new}.{DOMAIN}", f"k8s-worker-3.{DOMAIN}"]},
    }
    orch = Minion(tmp_path, f"salt.{DOMAIN}", pillar).call("state.show_sls", "orch.deploy")
    assert args_of(orch["orch-deploy-salt-function-sync-all"], "salt.function")["tgt"] == "*"
    assert args_of(orch["orch-deploy-salt-state-salt-master"], "salt.state")["tgt"] == "salt.*"
    joiners = [
        args_of(orch[f"orch-deploy-salt-state-{step}"], "salt.state")["tgt"] for step in ("control-plane", "workers")
    ]
    assert joiners == [f"k8s-worker-0.{DOMAIN},k8s-worker-1.{DOMAIN}", f"k8s-worker-2.{DOMAIN},k8s-worker-3.{DOMAIN}"]


def test_with_a_channel_set_new_nodes_join_only_a_cluster_at_its_release(tmp_path, pillar_data):
    pillar = with_nodes(pillar_data, 3)
    pillar["microk8s"]["channel"] = "1.29/stable"
    orch = Minion(tmp_path, f"salt.{DOMAIN}", pillar).call("state.show_sls", "orch.deploy")
    release = args_of(orch["orch-deploy-salt-function-release-check"], "salt.function")
    assert release["arg"] == ["1.29/stable"]


def without_order(args: dict) -> dict:
    """A state's arguments less the ``order`` Salt adds."""
    return {key: value for key, value in args.items() if key != "order"}


def with_labels(pillar: dict) -> dict:
    """``pillar`` with each node's labels and taints as Terraform writes them: its pool, gpu taints on one."""
    nodes = [
        {
            **node,
            "labels": {"kube-on-os/pool": "gpu" if i == 1 else "default"},
            "taints": ["gpu=true:NoSchedule"] * (i == 1),
        }
        for i, node in enumerate(pillar["microk8s"]["nodes"])
    ]
    return {**pillar, "microk8s": {**pillar["microk8s"], "nodes": nodes}}


@pytest.mark.parametrize("count", [1, 4])
@pytest.mark.parametrize("labelled", [True, False], ids=["labels", "older-pillar"])
def test_orchestration_labels_and_taints_every_node_from_the_master_after_the_cluster_check(
    tmp_path, pillar_data, count, labelled
):
    pillar = with_nodes(pillar_data, count)
    pillar = with_labels(pillar) if labelled else pillar
    orch = Minion(tmp_path / "salt", f"salt.{DOMAIN}", pillar).call("state.show_sls", "orch.deploy")
    step = args_of(orch["orch-deploy-salt-state-node-labels"], "salt.state")
    # The master runs kubectl for every node: the pillar's nodes are read there, not passed here.
    assert without_order(step) == {
        "tgt": f"k8s-master.{DOMAIN}",
        "sls": "microk8s.labels",
        "require": [{"salt": "orch-deploy-salt-function-uncordon-replaced"}],
    }
    shown = Minion(tmp_path / "master", f"k8s-master.{DOMAIN}", pillar).call("state.show_sls", "microk8s.labels")
    assert list(shown) == ["microk8s-labels-microk8s-nodes-labelled"]
    labelled_state = args_of(shown["microk8s-labels-microk8s-nodes-labelled"], "microk8s.nodes_labelled")
    assert without_order(labelled_state) == {"name": "microk8s:nodes"}
    # What the state reads is the pillar as Terraform wrote it, unchanged.
    nodes = Minion(tmp_path / "pillar", f"k8s-master.{DOMAIN}", pillar).call("pillar.get", "microk8s:nodes")
    assert nodes == pillar["microk8s"]["nodes"]


def test_orchestration_takes_the_voters_from_the_pillar_not_from_names(tmp_path, pillar_data):
    # A pillar layer may name other voters: the steps follow it, not the host names.
    pillar = with_nodes(pillar_data, 5)
    pillar["microk8s"]["control_plane"] = [f"k8s-master.{DOMAIN}", f"k8s-worker-3.{DOMAIN}"]
    orch = Minion(tmp_path, f"salt.{DOMAIN}", pillar).call("state.show_sls", "orch.deploy")
    assert args_of(orch["orch-deploy-salt-state-control-plane"], "salt.state")["tgt"] == f"k8s-worker-3.{DOMAIN}"
    assert args_of(orch["orch-deploy-salt-state-workers"], "salt.state")["tgt"] == ",".join(
        f"k8s-worker-{i}.{DOMAIN}" for i in range(3)
    )


def test_the_upgrade_rolls_one_node_at_a_time_master_voters_workers(tmp_path, pillar_data):
    pillar = with_nodes(pillar_data, 5)
    pillar["microk8s"]["channel"] = "1.29/stable"
    orch = Minion(tmp_path, f"salt.{DOMAIN}", pillar).call("state.show_sls", "orch.upgrade")
    hosts = ["k8s-master", "k8s-worker-0", "k8s-worker-1", "k8s-worker-2", "k8s-worker-3"]
    chain = [
        "orch-upgrade-salt-function-sync-all",
        "orch-upgrade-salt-function-refresh-pillar",
        "orch-upgrade-salt-function-plan",
        *(
            f"orch-upgrade-salt-{step}-{host}"
            for host in hosts
            for step in ("function-drain", "state-refresh", "function-ready", "function-uncordon")
        ),
    ]
    assert sorted(orch) == sorted(chain)
    # Each step waits for the one before: never two nodes out at once, and a failure stops the roll.
    for before, after in itertools.pairwise(chain):
        assert requires(orch[after]) == [{"salt": before}], f"{after} must require {before} only"
    master = f"k8s-master.{DOMAIN}"
    plan = args_of(orch["orch-upgrade-salt-function-plan"], "salt.function")
    assert (plan["name"], plan["tgt"], plan["arg"]) == ("microk8s.upgrade_plan", master, ["1.29/stable"])
    drain = args_of(orch["orch-upgrade-salt-function-drain-k8s-worker-2"], "salt.function")
    assert (drain["tgt"], drain["arg"]) == (master, ["10.1.0.102", "1.29/stable", 300])
    refresh = args_of(orch["orch-upgrade-salt-state-refresh-k8s-worker-2"], "salt.state")
    assert (refresh["tgt"], refresh["sls"]) == (f"k8s-worker-2.{DOMAIN}", "microk8s.upgrade")
    ready = args_of(orch["orch-upgrade-salt-function-ready-k8s-worker-2"], "salt.function")
    assert ready["arg"] == ["10.1.0.102", "1.29/stable", 600]
    # Run by hand it rolls one minor: the plan refuses more.
    assert plan["kwarg"] == {"one_minor": True}
    assert refresh["pillar"] == {"microk8s": {"channel": "1.29/stable"}}


def test_a_step_of_the_chains_roll_takes_its_channel_and_skips_the_sync_once_done(tmp_path, pillar_data):
    # upgrade.sh's second step of 1.28 -> 1.30 on two nodes, microk8s_channel 1.30/stable.
    pillar = with_nodes(pillar_data, 3)
    pillar["microk8s"]["channel"] = "1.30/stable"
    pillar["orchestration"] = {
        "roll": [f"k8s-master.{DOMAIN}", f"k8s-worker-1.{DOMAIN}"],
        "channel": "1.29/stable",
        "synced": True,
    }
    orch = Minion(tmp_path, f"salt.{DOMAIN}", pillar).call("state.show_sls", "orch.upgrade")
    chain = [
        "orch-upgrade-salt-function-plan",
        *(
            f"orch-upgrade-salt-{step}-{host}"
            for host in ("k8s-master", "k8s-worker-1")
            for step in ("function-drain", "state-refresh", "function-ready", "function-uncordon")
        ),
    ]
    assert sorted(orch) == sorted(chain)
    assert "require" not in args_of(orch[chain[0]], "salt.function")
    assert args_of(orch["orch-upgrade-salt-function-plan"], "salt.function")["arg"] == ["1.29/stable"]
    refresh = args_of(orch["orch-upgrade-salt-state-refresh-k8s-worker-1"], "salt.state")
    assert refresh["pillar"] == {"microk8s": {"channel": "1.29/stable"}}
    ready = args_of(orch["orch-upgrade-salt-function-ready-k8s-worker-1"], "salt.function")
    assert ready["arg"] == ["10.1.0.101", "1.29/stable", 600]


def test_the_upgrade_without_a_channel_fails_and_touches_no_node(tmp_path, pillar_data):
    assert pillar_data["microk8s"]["channel"] is None
    orch = Minion(tmp_path, f"salt.{DOMAIN}", with_nodes(pillar_data, 3)).call("state.show_sls", "orch.upgrade")
    assert list(orch) == ["orch-upgrade-test-fail-without-changes-no-channel"]
    refusal = args_of(orch["orch-upgrade-test-fail-without-changes-no-channel"], "test.fail_without_changes")
    assert refusal["name"] == (
        "orch.upgrade needs a channel: pillar orchestration:channel, or microk8s:channel (microk8s_channel)"
    )


def test_the_reboot_rolls_one_node_at_a_time_and_a_voter_waits_for_the_master(tmp_path, pillar_data):
    pillar = with_nodes(pillar_data, 4)
    pillar["orchestration"] = {"roll": [f"k8s-worker-2.{DOMAIN}", f"k8s-master.{DOMAIN}"]}
    orch = Minion(tmp_path, f"salt.{DOMAIN}", pillar).call("state.show_sls", "orch.reboot")
    steps = ("function-drain", "function-reboot", "wait-for-event-start", "function-ready", "function-uncordon")
    # The roll's order, not the pillar's: the master first.
    chain = [f"orch-reboot-salt-{step}-{host}" for host in ("k8s-master", "k8s-worker-2") for step in steps]
    assert sorted(orch) == sorted(chain)
    assert "require" not in args_of(orch[chain[0]], "salt.function")
    for before, after in itertools.pairwise(chain):
        assert requires(orch[after]) == [{"salt": before}], f"{after} must require {before} only"
    master, voter, worker = (f"{host}.{DOMAIN}" for host in ("k8s-master", "k8s-worker-0", "k8s-worker-2"))
    # The master's minion is down while it reboots: the next voter drains it and waits for it.
    for host, node, operator, address in (
        ("k8s-master", master, voter, "10.1.0.10"),
        ("k8s-worker-2", worker, master, "10.1.0.102"),
    ):
        drain = args_of(orch[f"orch-reboot-salt-function-drain-{host}"], "salt.function")
        assert (drain["name"], drain["tgt"], drain["arg"]) == ("microk8s.drain_for_reboot", operator, [address, 300])
        reboot = args_of(orch[f"orch-reboot-salt-function-reboot-{host}"], "salt.function")
        assert (reboot["name"], reboot["tgt"]) == ("kube_on_os.reboot", node)
        start = args_of(orch[f"orch-reboot-salt-wait-for-event-start-{host}"], "salt.wait_for_event")
        assert (start["name"], start["id_list"], start["timeout"]) == (f"salt/minion/{node}/start", [node], 600)
        ready = args_of(orch[f"orch-reboot-salt-function-ready-{host}"], "salt.function")
        assert (ready["name"], ready["tgt"], ready["arg"]) == ("microk8s.wait_node_rebooted", operator, [address, 600])
        uncordon = args_of(orch[f"orch-reboot-salt-function-uncordon-{host}"], "salt.function")
        assert (uncordon["tgt"], uncordon["arg"]) == (operator, [address])


def test_a_one_node_cluster_reboots_its_master_and_waits_for_it_on_itself(tmp_path, pillar_data):
    pillar = with_nodes(pillar_data, 1)
    orch = Minion(tmp_path, f"salt.{DOMAIN}", pillar).call("state.show_sls", "orch.reboot")
    master = f"k8s-master.{DOMAIN}"
    assert args_of(orch["orch-reboot-salt-function-drain-k8s-master"], "salt.function")["tgt"] == master
    assert args_of(orch["orch-reboot-salt-function-ready-k8s-master"], "salt.function")["tgt"] == master


def test_the_upgrade_sls_tracks_the_pillar_channel(tmp_path, pillar_data):
    pillar = {**pillar_data, "microk8s": {**pillar_data["microk8s"], "channel": "1.29/beta"}}
    minion = Minion(tmp_path, f"k8s-worker-0.{DOMAIN}", pillar)
    minion.call("saltutil.sync_all")
    shown = minion.call("state.show_sls", "microk8s.upgrade")
    assert (
        args_of(shown["microk8s-upgrade-microk8s-channel-tracked"], "microk8s.channel_tracked")["name"] == "1.29/beta"
    )


def test_core_renders_the_wiki_states_on_every_machine(tmp_path, pillar_data):
    highstate = Minion(tmp_path, f"k8s-worker-0.{DOMAIN}", pillar_data).highstate()
    assert {s for s in sls_of(highstate) if s.startswith("core.")} == {
        f"core.{name}"
        for name in ["sysctl", "locale", "motd", "sshd", "resolv", "hosts", "packages", "minion", "users"]
    }
    assert args_of(highstate["core-locale-locale-system"], "locale.system")["name"] == "C.UTF-8"
    assert args_of(highstate["core-resolv-file-managed"], "file.managed")["context"] == {
        "nameservers": ["1.1.1.1", "1.0.0.1"]
    }
    user = args_of(highstate["core-users-ssh-auth-present-waldorf"], "ssh_auth.present")
    assert user["names"] == [KEY]
    sshd = args_of(highstate["core-sshd-service-running"], "service.running")
    assert sshd["reload"] is True
    assert {"file": "core-sshd-file-managed-config"} in sshd["watch"]


def test_sshd_config_forbids_root_and_password_logins():
    config = (ROOT / "salt" / "core" / "files" / "sshd_config.jinja").read_text().splitlines()
    assert "PermitRootLogin no" in config
    assert "PasswordAuthentication no" in config


def test_bastion_masquerades_the_private_network_out_of_the_public_interface(tmp_path, pillar_data):
    # ens4 is listed before ens3 on purpose: the interface is found by address, not by order.
    highstate = Minion(tmp_path, f"bastion.{DOMAIN}", pillar_data, grains=BASTION_GRAINS).highstate()
    rule = args_of(highstate["bastion-iptables-iptables-append-masquerade"], "iptables.append")
    assert rule["source"] == "10.1.0.0/16"
    assert rule["out-interface"] == "ens3"
    assert rule["jump"] == "MASQUERADE"
    assert rule["table"] == "nat"
    assert {"sls": "bastion.sysctl"} in rule["require"]
    assert args_of(highstate["bastion-sysctl-sysctl-present-net.ipv4.ip_forward"], "sysctl.present")["value"] == 1


def test_microk8s_uses_the_pillar_networks_and_the_floating_ip(tmp_path, pillar_data):
    highstate = Minion(tmp_path, f"k8s-master.{DOMAIN}", pillar_data).highstate()
    launch = args_of(highstate["microk8s-install-file-managed-launch-config"], "file.managed")
    assert launch["context"] == {"pod_cidr": "10.244.0.0/16", "service_cidr": "10.152.183.0/24"}
    sans = args_of(highstate["microk8s-certificates-microk8s-extra-sans"], "microk8s.extra_sans")
    assert sans["addresses"] == pillar_data["microk8s"]["api_addresses"]
    assert sans["addresses"][0] == pillar_data["microk8s"]["allowed_csr_ip"]
    enabled = {
        args_of(s, "microk8s.addon_enabled")["name"]
        for i, s in highstate.items()
        if i.startswith("microk8s-addons-microk8s-addon-enabled-")
    }
    assert enabled == {"dns", "hostpath-storage", "helm3", "ha-cluster", "observability"}
    assert "microk8s-addons-microk8s-addon-disabled-registry" in highstate


@pytest.mark.parametrize("host", ["k8s-master", "k8s-worker-0", "k8s-gpu-0"])
def test_every_kubernetes_node_holds_snapds_own_refreshes_of_microk8s_once_it_is_installed(tmp_path, pillar_data, host):
    highstate = Minion(tmp_path, f"{host}.{DOMAIN}", pillar_data).highstate()
    held = highstate["microk8s-install-microk8s-refreshes-held"]
    assert held["__sls__"] == "microk8s.install"
    assert args_of(held, "microk8s.refreshes_held")["require"] == [{"cmd": "microk8s-install-cmd-run-snap"}]


LB_ADDRESSES = ["203.0.113.10", "203.0.113.20", "10.1.0.5"]
# certificates.sls' refresh of server.crt, which runs on the extra SANs' changes.
REFRESH = "microk8s-certificates-module-run-refresh-certs"


@pytest.mark.parametrize(
    ("api_addresses", "allowed_csr_ip", "sans"),
    [
        # The master's floating IP, then the load balancer's floating IP and VIP.
        (LB_ADDRESSES, "203.0.113.10", LB_ADDRESSES),
        # An older pillar, or one without the key's value: the floating IP alone.
        (None, "203.0.113.10", ["203.0.113.10"]),
        ([], "203.0.113.10", ["203.0.113.10"]),
    ],
)
def test_the_api_certificate_names_every_api_address_and_is_refreshed_on_changes(
    tmp_path, pillar_data, api_addresses, allowed_csr_ip, sans
):
    microk8s = {k: v for k, v in pillar_data["microk8s"].items() if k != "api_addresses"}
    microk8s["allowed_csr_ip"] = allowed_csr_ip
    if api_addresses is not None:
        microk8s["api_addresses"] = api_addresses
    highstate = Minion(tmp_path, f"k8s-master.{DOMAIN}", {**pillar_data, "microk8s": microk8s}).highstate()
    extra_sans = args_of(highstate["microk8s-certificates-microk8s-extra-sans"], "microk8s.extra_sans")
    assert extra_sans["addresses"] == sans
    assert {"sls": "microk8s.install"} in extra_sans["require"]
    refresh = args_of(highstate[REFRESH], "module.run")
    assert refresh["microk8s.refresh_certs"] == [{"cert": "server.crt"}]
    assert refresh["onchanges"] == [{"microk8s": "microk8s-certificates-microk8s-extra-sans"}]


def three_voters(pillar_data: dict) -> dict:
    """The microk8s pillar of the master and three workers at 10.1.0.100-102, the first three the voters."""
    nodes = [{**pillar_data["microk8s"]["nodes"][0], "id": f"k8s-worker-{i}.{DOMAIN}"} for i in range(3)]
    for i, node in enumerate(nodes):
        node["address"] = f"10.1.0.{100 + i}"
    microk8s = {**pillar_data["microk8s"], "nodes": [pillar_data["microk8s"]["nodes"][0], *nodes]}
    microk8s["control_plane"] = [microk8s["nodes"][i]["id"] for i in range(3)]
    return microk8s


@pytest.mark.parametrize(("host", "voter"), [("k8s-worker-0", True), ("k8s-worker-1", True), ("k8s-worker-2", False)])
def test_every_voter_names_every_api_address_in_its_certificate_after_its_join_and_no_worker_does(
    tmp_path, pillar_data, host, voter
):
    # The load balancer spreads kubectl's connections over every voter: each one's certificate
    # must name the API addresses, not the master's alone. A worker (--worker) serves no API.
    microk8s = three_voters(pillar_data)
    highstate = Minion(tmp_path, f"{host}.{DOMAIN}", {**pillar_data, "microk8s": microk8s}).highstate()
    if not voter:
        assert [i for i in highstate if i.startswith("microk8s-certificates-")] == []
        return
    extra_sans = args_of(highstate["microk8s-certificates-microk8s-extra-sans"], "microk8s.extra_sans")
    assert extra_sans["addresses"] == pillar_data["microk8s"]["api_addresses"]
    # After the join, whose new CA makes the node issue itself a certificate from its template.
    assert {"sls": "microk8s.joined"} in extra_sans["require"]
    refresh = args_of(highstate[REFRESH], "module.run")
    assert refresh["onchanges"] == [{"microk8s": "microk8s-certificates-microk8s-extra-sans"}]


@pytest.mark.parametrize("host", ["k8s-master", "k8s-worker-0"])
def test_the_certificate_is_refreshed_by_the_modules_refresh_certs_not_by_a_shell_command(
    tmp_path, pillar_data, microk8s, host
):
    # Like every other microk8s command, refresh-certs goes through the execution module (an
    # argument list, a timeout, microk8s' reason in the error), not through cmd.run.
    highstate = Minion(tmp_path, f"{host}.{DOMAIN}", {**pillar_data, "microk8s": three_voters(pillar_data)}).highstate()
    certificates = [state for state in highstate.values() if state["__sls__"] == "microk8s.certificates"]
    assert sorted(module for state in certificates for module in state if not module.startswith("__")) == [
        "microk8s",
        "module",
    ]
    refresh = args_of(highstate[REFRESH], "module.run")
    assert "run" in highstate[REFRESH]["module"]
    assert [name for name in refresh if "." in name] == ["microk8s.refresh_certs"]
    assert refresh["onchanges"] == [{"microk8s": "microk8s-certificates-microk8s-extra-sans"}]
    # module.run's own call (salt.utils.functools.call_function) with the rendered arguments runs
    # the command the SLS ran before: microk8s refresh-certs --cert server.crt.
    argv = []

    def run_all(cmd, **kwargs):
        argv.append(cmd)
        return {"retcode": 0, "stdout": "Restarting services", "stderr": ""}

    microk8s.__salt__ = {"cmd.run_all": run_all}
    assert call_function(microk8s.refresh_certs, *refresh["microk8s.refresh_certs"]) == "Restarting services"
    assert argv == [["microk8s", "refresh-certs", "--cert", "server.crt"]]


@pytest.mark.parametrize("host", ["k8s-master", "k8s-worker-0", "k8s-worker-1", "k8s-worker-2"])
def test_every_api_server_advertises_its_private_address_after_its_join_and_no_worker_has_one(
    tmp_path, pillar_data, host
):
    # Without --advertise-address, the dual-homed master's API server advertises its public
    # address (the default route's) as the kubernetes Service's endpoint.
    microk8s = three_voters(pillar_data)
    highstate = Minion(tmp_path, f"{host}.{DOMAIN}", {**pillar_data, "microk8s": microk8s}).highstate()
    address = next(n["address"] for n in microk8s["nodes"] if n["id"] == f"{host}.{DOMAIN}")
    if host == "k8s-worker-2":
        assert [i for i in highstate if i.startswith("microk8s-apiserver-")] == []
        return
    advertise = args_of(
        highstate["microk8s-apiserver-microk8s-apiserver-advertise-address"], "microk8s.apiserver_advertise_address"
    )
    assert advertise["address"] == address
    # After the join (which keeps the line), before the certificate's refresh (both restart kubelite).
    assert {"sls": "microk8s.joined"} in advertise["require"]
    order = list(highstate)
    assert order.index("microk8s-apiserver-microk8s-apiserver-advertise-address") < order.index(
        "microk8s-certificates-microk8s-extra-sans"
    )


def test_without_any_api_address_the_certificate_is_left_alone(tmp_path, pillar_data):
    microk8s = {k: v for k, v in pillar_data["microk8s"].items() if k not in ("api_addresses", "allowed_csr_ip")}
    highstate = Minion(tmp_path, f"k8s-master.{DOMAIN}", {**pillar_data, "microk8s": microk8s}).highstate()
    assert "microk8s-install-file-managed-launch-config" in highstate
    assert [i for i in highstate if i.startswith("microk8s-certificates-")] == []


@pytest.mark.parametrize("host", ["k8s-master", "k8s-worker-0"])
def test_every_kubernetes_node_joins_the_issuer_after_core_hosts_and_can_issue(tmp_path, pillar_data, host):
    highstate = Minion(tmp_path, f"{host}.{DOMAIN}", pillar_data).highstate()
    joined = args_of(highstate["microk8s-joined-microk8s-cluster-joined"], "microk8s.cluster_joined")
    # No master named: the state asks microk8s.issuer when it runs (the master, or a voter while
    # a rebuilt master stands alone).
    assert "master" not in joined
    assert (joined["attempts"], joined["interval"], joined["max_interval"]) == (8, 5, 60)
    assert {"sls": "core.hosts"} in joined["require"]
    published = args_of(highstate["microk8s-tokens-microk8s-join-tokens-published"], "microk8s.join_tokens_published")
    assert published["ttl"] == -1


def test_the_master_joins_before_its_certificate_addons_and_tokens(tmp_path, pillar_data):
    minion = Minion(tmp_path, f"k8s-master.{DOMAIN}", pillar_data)
    minion.call("saltutil.sync_all")
    # The low chunks in the order Salt runs them (state_auto_order: include order, then file order).
    lows = sorted(minion.call("state.show_lowstate"), key=lambda low: low["order"])
    ids = [low["__id__"] for low in lows if low["__sls__"].startswith("microk8s")]
    joined = ids.index("microk8s-joined-microk8s-cluster-joined")
    assert joined < ids.index("microk8s-certificates-microk8s-extra-sans")
    assert joined < min(i for i, state_id in enumerate(ids) if state_id.startswith("microk8s-addons-"))
    assert ids[-1] == "microk8s-tokens-microk8s-join-tokens-published"


KUBELET = "microk8s-kubelet-microk8s-kubelet-external-cloud-provider"


@pytest.mark.parametrize("host", ["k8s-master", "k8s-worker-0", "k8s-gpu-0"])
@pytest.mark.parametrize(("given", "external"), [(True, True), (False, False), (None, False)])
def test_every_kubernetes_node_keeps_its_kubelet_flag_as_the_pillar_says_after_the_join(
    tmp_path, pillar_data, host, given, external
):
    # None: an older pillar without the key (Terraform's side writes it with the cloud integration).
    microk8s = {k: v for k, v in pillar_data["microk8s"].items() if k != "external_cloud_provider"}
    if given is not None:
        microk8s["external_cloud_provider"] = given
    highstate = Minion(tmp_path, f"{host}.{DOMAIN}", {**pillar_data, "microk8s": microk8s}).highstate()
    state = args_of(highstate[KUBELET], "microk8s.kubelet_external_cloud_provider")
    assert state["external"] is external
    assert {"sls": "microk8s.joined"} in state["require"] and {"sls": "microk8s.install"} in state["require"]


@pytest.mark.parametrize("host", ["k8s-master", "k8s-worker-0"])
def test_the_kubelet_flag_runs_after_the_join_and_before_the_rest(tmp_path, pillar_data, host):
    minion = Minion(tmp_path, f"{host}.{DOMAIN}", pillar_data)
    minion.call("saltutil.sync_all")
    lows = sorted(minion.call("state.show_lowstate"), key=lambda low: low["order"])
    ids = [low["__id__"] for low in lows if low["__sls__"].startswith("microk8s")]
    assert ids.index("microk8s-joined-microk8s-cluster-joined") < ids.index(KUBELET)
    assert ids.index(KUBELET) < ids.index("microk8s-tokens-microk8s-join-tokens-published")
    if host == "k8s-master":
        assert ids.index(KUBELET) < ids.index("microk8s-certificates-microk8s-extra-sans")


def test_no_other_minion_renders_the_kubelet_flag(tmp_path, pillar_data):
    for host in ("salt", "bastion"):
        grains = BASTION_GRAINS if host == "bastion" else None
        assert KUBELET not in Minion(tmp_path / host, f"{host}.{DOMAIN}", pillar_data, grains=grains).highstate()


@pytest.mark.parametrize("host", ["k8s-master", "k8s-worker-0", "k8s-worker-7"])
def test_every_kubernetes_node_publishes_membership_and_tokens_readable_by_k8s_nodes_only(tmp_path, pillar_data, host):
    mine = Minion(tmp_path, f"{host}.{DOMAIN}", pillar_data).call("pillar.get", "mine_functions")
    assert mine["network.ip_addrs"] == {"cidr": "10.1.0.0/16"}
    for function in ("microk8s.join_tokens", "microk8s.membership"):
        assert mine[function] == [{"mine_function": function}, {"allow_tgt": "k8s-*"}, {"allow_tgt_type": "glob"}]


@pytest.mark.parametrize("host", ["salt", "bastion"])
def test_machines_without_microk8s_publish_no_microk8s_mine_data(tmp_path, pillar_data, host):
    mine = Minion(tmp_path, f"{host}.{DOMAIN}", pillar_data).call("pillar.get", "mine_functions")
    assert sorted(mine) == ["network.ip_addrs"]


def test_the_snap_install_reloads_modules_so_the_microk8s_module_appears(tmp_path, pillar_data):
    highstate = Minion(tmp_path, f"k8s-worker-0.{DOMAIN}", pillar_data).highstate()
    assert args_of(highstate["microk8s-install-cmd-run-snap"], "cmd.run")["reload_modules"] is True


def test_the_snap_installs_from_the_channel_terraform_writes(tmp_path, pillar_data):
    # microk8s_channel unset arrives as a null microk8s:channel: with no node in the mine yet (a
    # new cluster), the new cluster's channel; kube_on_os.microk8s_channel picks the nodes' otherwise.
    assert pillar_data["microk8s"]["channel"] is None
    highstate = Minion(tmp_path, f"k8s-worker-0.{DOMAIN}", pillar_data).highstate()
    snap = args_of(highstate["microk8s-install-cmd-run-snap"], "cmd.run")
    assert snap["name"] == "snap install microk8s --classic --channel=1.35/stable"
    pillar = {**pillar_data, "microk8s": {**pillar_data["microk8s"], "channel": "1.34/edge"}}
    highstate = Minion(tmp_path / "set", f"k8s-worker-0.{DOMAIN}", pillar).highstate()
    snap = args_of(highstate["microk8s-install-cmd-run-snap"], "cmd.run")
    assert snap["name"] == "snap install microk8s --classic --channel=1.34/edge"


LAYERS = [
    "_from_terraform.sls",
    "environments/defaults.sls",
    f"environments/{DOMAIN.replace('.', '_')}.sls",
    "roles/kubernetes.sls",
    "minions/defaults/k8s-worker-0.sls",
    f"minions/{DOMAIN.replace('.', '_')}/k8s-worker-0.sls",
]


@pytest.mark.parametrize("winner", range(len(LAYERS)))
def test_each_pillar_layer_overrides_the_earlier_ones(tmp_path, pillar_data, winner):
    # Every layer up to `winner` sets the key; the most specific of them must win.
    pillar = {**pillar_data, "probe": {"layer": LAYERS[0]}}
    extra = {layer: {"probe": {"layer": layer}} for layer in LAYERS[1 : winner + 1]}
    minion = Minion(tmp_path, f"k8s-worker-0.{DOMAIN}", pillar, extra_pillar=extra)
    assert minion.call("pillar.get", "probe:layer") == LAYERS[winner]


def test_missing_layers_are_fine_and_terraform_values_arrive(tmp_path, pillar_data):
    items = Minion(tmp_path, f"salt.{DOMAIN}", pillar_data).call("pillar.items")
    assert items["network"]["private_cidr"] == "10.1.0.0/16"
    assert items["mine_functions"]["network.ip_addrs"] == {"cidr": "10.1.0.0/16"}
    # The Salt tree's defaults are its own (defaults.yaml), not a pillar layer's copy of them.
    assert "orchestration" not in items


SALT = ROOT / "salt"
# What the microk8s module reads from the pillar itself, beside the states' maps.
MODULE_KEYS = ["microk8s:nodes", "microk8s:master", "microk8s:control_plane", "microk8s:join:token_ttl"]


def key_paths(tree: dict, prefix: str = "") -> list[str]:
    """``a:b:c`` for every leaf of a mapping; a list or a scalar is a leaf."""
    paths = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        paths.extend(key_paths(value, f"{path}:") if isinstance(value, dict) and value else [path])
    return paths


def templates() -> list[Path]:
    return sorted(p for p in SALT.rglob("*") if p.suffix in (".sls", ".jinja"))


def test_pillar_example_documents_every_key_the_states_and_modules_read():
    example = yaml.safe_load((ROOT / "pillar" / "pillar.example").read_text())
    keys = {key for defaults in SALT.glob("*/defaults.yaml") for key in key_paths(yaml.safe_load(defaults.read_text()))}
    assert {"users", "network:public_cidr", "microk8s:join:attempts", "orchestration:worker_batch"} <= keys
    for key in sorted(keys | set(MODULE_KEYS)):
        node = example
        for part in key.split(":"):
            assert isinstance(node, dict) and part in node, f"pillar.example lacks {key}"
            node = node[part]


def test_both_examples_give_every_node_entry_the_keys_the_module_reads_from_one():
    # _membership.parse_roles reads id and address, _labels.pillar_nodes labels and taints,
    # _cloud.provider_id_plan instance_id (which Terraform's side of the contract adds; an older
    # pillar lacks it).
    labels = (SALT / "_modules" / "microk8s" / "_labels.py").read_text()
    assert 'node.get("labels"), node.get("taints")' in labels
    assert 'node.get("instance_id")' in (SALT / "_modules" / "microk8s" / "_cloud.py").read_text()
    every = ["address", "id", "instance_id", "labels", "taints"]
    nodes = yaml.safe_load((ROOT / "pillar" / "pillar.example").read_text())["microk8s"]["nodes"]
    assert [sorted(node) for node in nodes] == [every] * len(nodes)
    nodes = yaml.safe_load((ROOT / "pillar" / "_from_terraform.sls.example").read_text())["microk8s"]["nodes"]
    assert all({"address", "id", "labels", "taints"} <= set(node) <= set(every) for node in nodes)


def test_the_module_keys_are_the_ones_it_reads():
    sources = "\n".join(p.read_text() for p in (SALT / "_modules" / "microk8s").glob("*.py"))
    read = {f"microk8s:{key}" for key in re.findall(r'settings\.get\("([a-z_]+)"\)', sources)}
    read.update(re.findall(r'pillar\.get"\]\("(microk8s:[a-z_:]+)"', sources))
    assert read == set(MODULE_KEYS)


def test_states_read_the_pillar_only_through_a_map_of_defaults():
    # A default written next to a pillar lookup in a state would be a second home for it.
    readers = [
        str(p.relative_to(SALT))
        for p in templates()
        if p.name != "map.jinja" and re.search(r"pillar\.(get|items?|raw|fetch)\b|pillar\[", p.read_text())
    ]
    assert readers == []
    for map_file in SALT.glob("*/map.jinja"):
        defaults = f'import_yaml "{map_file.parent.name}/defaults.yaml" as defaults'
        assert defaults in map_file.read_text(), f"{map_file.relative_to(SALT)} must merge its defaults.yaml"


def test_an_sls_without_jinja_is_rendered_as_plain_data():
    sls = [*SALT.rglob("*.sls"), *(ROOT / "pillar").rglob("*.sls")]
    plain = [p for p in sls if not re.search(r"\{\{|\{%|\{#", p.read_text())]
    assert len(plain) > 5
    assert [
        str(p.relative_to(ROOT)) for p in plain if p.read_text().split("\n", 1)[0] not in ("#!yaml", "#!json")
    ] == []
    example = (ROOT / "pillar" / "_from_terraform.sls.example").read_text()
    assert example.startswith("#!yaml\n")


def test_a_later_layer_replaces_the_control_plane_rather_than_merging_it(tmp_path, pillar_data):
    # docs/microk8s-module.md: a layer over _from_terraform may name other voters.
    ids = [node["id"] for node in pillar_data["microk8s"]["nodes"]]
    pillar = {**pillar_data, "microk8s": {**pillar_data["microk8s"], "control_plane": ids}}
    extra = {f"environments/{DOMAIN.replace('.', '_')}.sls": {"microk8s": {"control_plane": ids[:1]}}}
    minion = Minion(tmp_path, f"k8s-master.{DOMAIN}", pillar, extra_pillar=extra)
    assert minion.call("pillar.get", "microk8s:control_plane") == ids[:1]
    assert minion.call("pillar.get", "microk8s:nodes") == pillar_data["microk8s"]["nodes"]


def test_a_bastion_without_its_networks_fails_to_render_and_says_why(tmp_path, pillar_data):
    pillar = {key: value for key, value in pillar_data.items() if key != "network"}
    minion = Minion(tmp_path, f"bastion.{DOMAIN}", pillar, grains=BASTION_GRAINS)
    minion.call("saltutil.sync_all")
    # Not minion.call, which asserts that salt-call succeeded.
    result = salt_commands.run(
        "salt-call", "--local", f"--config-dir={minion.config_dir}", "--out=json", "state.show_sls", "bastion.iptables"
    )
    assert "interface_in needs a network in CIDR notation, got None" in result.stdout + result.stderr


# Pillar data is data (issue 17): what a user writes reaches the states as written. A real key
# blob (config checks it), and comments that would change under Jinja, under a YAML 1.1 reader
# or in a Terraform template (`${x}` and `%{x}` are written `$${x}` and `%%{x}` in the TF_VAR_).
BLOB = "AAAAC3NzaC1lZDI1NTE5AAAAILqFJsnsielbJp/rO869+muEu7U5J80K2gttNx0Dp/M1"
JINJA = "{{ 7*7 }} {% if 1 %}x{% endif %} {{ salt['test.echo']('x') }} {{ grains['id'] }} {# c #}"
YAML_WORDS = "yes null off ~ 0x10 1e3 2001-01-01 ' \" \\ \\\\ # x: y - z &a *a !t | > @ `"
TEMPLATE_SIGNS = "%{x} %%{x} ${x} $${x} $$ $ { % {"
UNICODE = "é 😀 \u2028 \x85 \x7f \t z"
ADVERSARIAL_USERS = [
    # Usernames that Linux and our config accept and YAML 1.1 reads as True, None, False, a string.
    {"username": "yes", "ssh_public_key": f"ssh-ed25519 {BLOB} {JINJA} {YAML_WORDS} {TEMPLATE_SIGNS}"},
    {"username": "null", "ssh_public_key": f"ssh-ed25519 {BLOB} off"},
    {"username": "off", "ssh_public_key": f"ssh-ed25519 {BLOB} - x: y # z"},
    {"username": "y", "ssh_public_key": f"ssh-ed25519 {BLOB} {UNICODE}"},
    {"username": "on", "ssh_public_key": f"ssh-ed25519 {BLOB}"},
]


@pytest.fixture(scope="session")
def adversarial_pillar_sls() -> str:
    return terraform_pillar(ADVERSARIAL_USERS)


def test_terraform_writes_the_pillar_for_a_data_only_renderer(pillar_sls, adversarial_pillar_sls):
    # Without the line Salt renders the file as Jinja first; the harness writes the same line.
    assert pillar_sls.split("\n", 1)[0] == "#!yaml"
    assert adversarial_pillar_sls.split("\n", 1)[0] == from_terraform_sls({}).split("\n", 1)[0]


def test_the_pillar_carries_the_users_verbatim(tmp_path, adversarial_pillar_sls):
    items = Minion(tmp_path, f"salt.{DOMAIN}", adversarial_pillar_sls).call("pillar.items")
    assert items["users"] == ADVERSARIAL_USERS
    assert all(type(user["username"]) is str for user in items["users"])


def test_core_users_receives_the_usernames_and_keys_verbatim(tmp_path, adversarial_pillar_sls):
    minion = Minion(tmp_path, f"k8s-worker-0.{DOMAIN}", adversarial_pillar_sls)
    states = minion.call("state.show_sls", "core.users")
    expected = {}
    for user in ADVERSARIAL_USERS:
        username = user["username"]
        present = f"core-users-user-present-{username}"
        expected[present] = {"name": username}
        expected[f"core-users-ssh-auth-present-{username}"] = {
            "user": username,
            "names": [user["ssh_public_key"]],
            "require": [{"user": present}],
        }
    assert sorted(states) == sorted(expected)
    for state_id, wanted in expected.items():
        function = "user.present" if "user-present" in state_id else "ssh_auth.present"
        args = args_of(states[state_id], function)
        assert {key: args[key] for key in wanted} == wanted, state_id
        assert type(args.get("name", args.get("user"))) is str


# The OpenStack cloud integration (microk8s.cloud_provider), from pillar/_cloud.sls.

CLOUD = yaml.safe_load((ROOT / "pillar" / "_cloud.sls.example").read_text())


def with_instances(pillar: dict) -> dict:
    """``pillar`` with each node's Nova server UUID, as Terraform writes it."""
    listed = pillar["microk8s"]["nodes"]
    nodes = [{**node, "instance_id": f"00000000-0000-4000-8000-{i:012d}"} for i, node in enumerate(listed)]
    return {**pillar, "microk8s": {**pillar["microk8s"], "nodes": nodes}}


def test_orchestration_applies_the_cloud_integration_from_the_master_after_the_labels(tmp_path, pillar_data):
    orch = Minion(tmp_path, f"salt.{DOMAIN}", with_instances(pillar_data)).call("state.show_sls", "orch.deploy")
    step = args_of(orch["orch-deploy-salt-state-cloud-provider"], "salt.state")
    assert without_order(step) == {
        "tgt": f"k8s-master.{DOMAIN}",
        "sls": "microk8s.cloud_provider",
        "require": [{"salt": "orch-deploy-salt-state-node-labels"}],
    }
    # The providerIDs come right after the joins, in a step of their own.
    ids = args_of(orch["orch-deploy-salt-state-provider-ids"], "salt.state")
    assert without_order(ids) == {
        "tgt": f"k8s-master.{DOMAIN}",
        "sls": "microk8s.provider_ids",
        "require": [{"salt": "orch-deploy-salt-state-spent-tokens"}],
    }


def test_the_master_renders_the_cloud_integration_in_order_with_no_secret_in_any_argument(tmp_path, pillar_data):
    minion = Minion(tmp_path, f"k8s-master.{DOMAIN}", with_instances(pillar_data), extra_pillar={"_cloud.sls": CLOUD})
    shown = minion.call("state.show_sls", "microk8s.cloud_provider")
    # Salt's order: the SLS's (each state also requires the one before it).
    assert sorted(shown, key=lambda state_id: args_of(shown[state_id], "microk8s.")["order"]) == [
        "microk8s-provider-ids-microk8s-provider-ids-set",
        "microk8s-cloud-provider-microk8s-cloud-config-secret",
        "microk8s-cloud-provider-microk8s-manifests-applied",
        "microk8s-cloud-provider-microk8s-nodes-initialized",
        "microk8s-cloud-provider-microk8s-default-storage-class",
    ]
    secret = args_of(shown["microk8s-cloud-provider-microk8s-cloud-config-secret"], "microk8s.cloud_config_secret")
    assert without_order(secret) == {
        "name": "kube-system/cloud-config",
        "ignore_volume_az": False,
        "metadata_search_order": "configDrive,metadataService",
        "require": [{"sls": "microk8s.provider_ids"}],
    }
    initialized = args_of(shown["microk8s-cloud-provider-microk8s-nodes-initialized"], "microk8s.nodes_initialized")
    assert without_order(initialized) == {
        "name": "microk8s:nodes",
        "timeout": 300,
        "require": [{"microk8s": "microk8s-cloud-provider-microk8s-manifests-applied"}],
    }
    manifests = args_of(shown["microk8s-cloud-provider-microk8s-manifests-applied"], "microk8s.manifests_applied")
    defaults = yaml.safe_load((SALT / "microk8s" / "defaults.yaml").read_text())["microk8s"]["cloud_provider"]
    assert manifests["name"] == f"cloud-provider-openstack {defaults['version']}"
    assert manifests["sources"] == [f"salt://microk8s/files/cloud-provider/{name}" for name in defaults["manifests"]]
    # Every source is shipped in salt/, pinned: its header names the release and the commit.
    snapshotter = defaults["snapshotter"]
    shipped = SALT / "microk8s" / "files" / "cloud-provider"
    for name in defaults["manifests"]:
        header = (shipped / name).read_text().split("\n", 1)[0]
        if name.startswith("snapshot-"):
            assert (
                f"kubernetes-csi/external-snapshotter {snapshotter['version']} (commit {snapshotter['commit']})"
                in header
            )
        else:
            assert f"kubernetes/cloud-provider-openstack {defaults['version']} (commit {defaults['commit']})" in header
    # The snapshot controller is the version of the Cinder controller's csi-snapshotter sidecar.
    controller = (shipped / "snapshot-controller.yaml").read_text()
    sidecar = (shipped / "cinder-csi-controllerplugin.yaml").read_text()
    assert f"sig-storage/snapshot-controller:{snapshotter['version']}\n" in controller
    assert f"sig-storage/csi-snapshotter:{snapshotter['version']}\n" in sidecar
    storage = args_of(shown["microk8s-cloud-provider-microk8s-default-storage-class"], "microk8s.default_storage_class")
    assert storage["name"] == "cinder"
    secret_value = CLOUD["openstack"]["cloud"]["application_credential_secret"]
    assert secret_value not in json.dumps(shown)
    # The master's pillar has the credential the module reads.
    assert minion.call("pillar.get", "openstack:cloud:application_credential_secret") == secret_value


def test_without_a_cloud_pillar_the_master_renders_nothing_of_the_cloud_integration(tmp_path, pillar_data):
    shown = Minion(tmp_path, f"k8s-master.{DOMAIN}", pillar_data).call("state.show_sls", "microk8s.cloud_provider")
    assert list(shown) == ["microk8s-cloud-provider-test-nop"]


@pytest.mark.parametrize("host", ["k8s-worker-0", "k8s-gpu-0", "bastion", "salt"])
def test_no_other_minion_gets_the_cloud_credential(tmp_path, pillar_data, host):
    minion = Minion(tmp_path, f"{host}.{DOMAIN}", pillar_data, extra_pillar={"_cloud.sls": CLOUD})
    assert minion.call("pillar.get", "openstack") == ""
    shown = minion.call("state.show_sls", "microk8s.cloud_provider")
    assert list(shown) == ["microk8s-cloud-provider-test-nop"]
