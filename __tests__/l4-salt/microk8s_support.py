"""
What the microk8s execution module's tests share (test_microk8s_*.py, test_cloud_module.py): the
cluster they lay out (harness.layout), microk8s' output from fixtures/microk8s/ behind a fake
``cmd.run_all``, and a fake master with its two joiners (harness.microk8s_node).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.layout import LAB
from harness.microk8s_node import FakeMicrok8s

FIXTURES = Path(__file__).parent / "fixtures" / "microk8s"
MASTER, CP_JOINER, WORKER = (m.fqdn for m in LAB.kube_nodes(3))
PILLAR = {
    "master": MASTER,
    "nodes": [{"id": m.fqdn, "address": m.address} for m in LAB.kube_nodes(3)],
    "control_plane": [MASTER, CP_JOINER],
}


def fake_cli(outputs: dict[tuple[str, ...], dict]):
    """A cmd.run_all that answers known argument lists and records every call."""
    calls = []

    def run_all(cmd, python_shell=True, timeout=None, ignore_retcode=False, log_callback=None):
        assert python_shell is False, "microk8s must be called with an argument list, not a shell string"
        assert timeout, "every microk8s call needs a timeout"
        calls.append(tuple(cmd))
        return outputs.get(tuple(cmd[1:]), {"retcode": 1, "stdout": "", "stderr": f"unexpected {cmd}"})

    run_all.calls = calls
    return run_all


def ok(stdout: str) -> dict:
    return {"retcode": 0, "stdout": stdout, "stderr": ""}


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


STATUS = ("status", "--format", "yaml")

NO_LOCK = {"config.get": lambda key, default=None: default, "file.file_exists": lambda path: False}


def pillar_get(tree: dict):
    """A ``pillar.get`` over ``tree``: a key names nested dicts, ``a:b:c``, as Salt's does."""

    def get(key, default=None):
        node = tree
        for part in key.split(":"):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    return get


def with_status(text: str, retcode: int = 0, **extra) -> dict:
    return {"cmd.run_all": fake_cli({STATUS: {"retcode": retcode, "stdout": text, "stderr": ""}}), **NO_LOCK, **extra}


class Cluster:
    """The fake master and its two joiners, with the master's module dunders."""

    def __init__(
        self, microk8s, root: Path, master_address: str = LAB.master.address, cp_joiner_ips: list[str] | None = None
    ):
        self.module = microk8s
        # master_address: kubelet's InternalIP, the pillar's private address unless the node is dual-homed.
        self.master = FakeMicrok8s(root / "master", root / "cluster", master_address, LAB.master.name)
        # cp_joiner_ips: its Node's InternalIPs, in their order, when not its address alone.
        cp_joiner, worker = LAB.worker(0), LAB.worker(1)
        self.cp_joiner = FakeMicrok8s(root / "cp", root / "cluster", cp_joiner.address, cp_joiner.name, cp_joiner_ips)
        self.worker = FakeMicrok8s(root / "worker", root / "cluster", worker.address, worker.name)
        self.calls: list = []
        self.cachedir = root / "cache"
        self.reports: dict = {}

    def as_master(self, minion_id: str = MASTER, pillar: dict | None = None, node: FakeMicrok8s | None = None):
        settings = pillar or {"microk8s": PILLAR}
        self.module.__opts__ = {"id": minion_id, "cachedir": str(self.cachedir)}
        self.module.__salt__ = (node or self.master).salt_functions(
            **{
                "pillar.get": pillar_get(settings),
                "mine.update": lambda: self.calls.append("mine.update"),
                # No voter has reported a membership: the pillar's master issues (a new cluster).
                "mine.get": lambda target, function, tgt_type="glob": self.reports,
                "state.sls": lambda sls, queue=False: (
                    self.calls.append(("state.sls", sls, queue)) or {"file_|-core-hosts": {"result": True}}
                ),
            }
        )
        return self.module

    def ledger(self) -> dict:
        return json.loads((self.cachedir / "kube-on-os" / "microk8s-join-tokens.json").read_text())


# What a voter of the running cluster reports (microk8s.membership), by which the issuer is chosen.
CP = {"role": "control-plane", "members": ["10.1.0.10", "10.1.0.100"], "ca": "ca-of-the-cluster"}


def joined_cluster(microk8s, tmp_path, master_address: str = LAB.master.address) -> Cluster:
    """The fake master with its voter and its worker joined, at 1.28."""
    cluster = Cluster(microk8s, tmp_path, master_address)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER, WORKER])
    tokens = master.join_tokens()
    assert cluster.cp_joiner.run("join", tokens[CP_JOINER]["urls"][0]).returncode == 0
    assert cluster.worker.run("join", tokens[WORKER]["urls"][0], "--worker").returncode == 0
    return cluster


def calls_of(node: FakeMicrok8s, prefix: str) -> list[str]:
    return [line for line in (node.home / "calls.log").read_text().splitlines() if line.startswith(prefix)]


def schedulable(master, address: str) -> list[bool]:
    return [not n["unschedulable"] for n in master.nodes() if n["address"] == address]
