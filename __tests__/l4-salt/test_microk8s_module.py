"""
The microk8s execution module: unit tests with __salt__/__opts__ patched over real-shaped
microk8s output (fixtures/microk8s/, see its README for where each shape comes from) or over the
fake microk8s (fake_microk8s.py), and the real Salt loader loading the package as one module.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import re
import stat
from pathlib import Path

import pytest
import yaml
from harness.layout import LAB
from harness.microk8s_node import FakeMicrok8s
from harness.salt_minion import ROOT, LocalMinion, load_module
from salt.exceptions import CommandExecutionError

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
# The not-ready window after a restart, for a test that looks inside it: long enough for the next
# command to start within it on a loaded machine (1 s was not, with the suites side by side).
RESTARTING = 8
NO_LOCK = {"config.get": lambda key, default=None: default, "file.file_exists": lambda path: False}


def with_status(text: str, retcode: int = 0, **extra) -> dict:
    return {"cmd.run_all": fake_cli({STATUS: {"retcode": retcode, "stdout": text, "stderr": ""}}), **NO_LOCK, **extra}


def test_status_parses_ha_nodes_roles_and_addons(microk8s):
    microk8s.__salt__ = with_status(fixture("status-ha.yaml"))
    status = microk8s.status()
    assert status["running"] is True
    assert status["worker"] is False
    assert status["high_availability"] == {
        "enabled": True,
        "nodes": [
            {"address": "10.1.0.10:19001", "role": "voter"},
            {"address": "10.1.0.100:19001", "role": "voter"},
            {"address": "10.1.0.101:19001", "role": "voter"},
            {"address": "10.1.0.102:19001", "role": "standby"},
        ],
    }
    assert status["addons"]["dns"] == {"status": "enabled", "description": "CoreDNS", "version": "1.28"}
    assert microk8s.addon_status("registry") == "disabled"
    assert len(microk8s.members()) == 4


def test_status_without_ha_has_no_nodes(microk8s):
    microk8s.__salt__ = with_status(fixture("status-single.yaml"))
    assert microk8s.status()["high_availability"] == {"enabled": False, "nodes": []}
    assert microk8s.addons()["hostpath-storage"]["status"] == "enabled"


def test_a_microk8s_that_is_not_ready_prints_valid_yaml_parsed_as_not_running(microk8s):
    text = fixture("status-not-running.yaml")
    assert yaml.safe_load(text)["high-availability"]["message"].startswith("microk8s is not running")
    microk8s.__salt__ = with_status(text)
    assert microk8s.status() == {
        "running": False,
        "worker": False,
        "high_availability": {"enabled": False, "nodes": []},
        "addons": {},
        "message": "microk8s is not running. Use microk8s inspect for a deeper inspection.",
    }
    assert microk8s.is_running() is False


def test_a_stopped_microk8s_prints_a_line_not_a_status_and_is_not_running(microk8s):
    microk8s.__salt__ = with_status(fixture("status-stopped.txt"))
    assert microk8s.status()["running"] is False
    assert microk8s.status()["message"] == "microk8s is not running, try microk8s start"
    assert microk8s.is_running() is False


def test_a_worker_node_has_no_status_and_is_running_by_its_service(microk8s):
    services = []
    microk8s.__salt__ = with_status(
        fixture("status-worker.txt"),
        **{"file.file_exists": lambda path: path.endswith("/var/lock/clustered.lock")},
        **{"service.status": lambda name: services.append(name) or True},
    )
    assert microk8s.status() == {
        "running": None,
        "worker": True,
        "high_availability": {"enabled": False, "nodes": []},
        "addons": {},
        "message": "This MicroK8s deployment is acting as a node in a cluster. Please use the control plane node.",
    }
    assert microk8s.is_worker() is True
    assert microk8s.is_running() is True
    assert services == ["snap.microk8s.daemon-kubelite"]
    assert microk8s.membership() == {"role": "worker", "members": [], "ca": None}


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


def test_status_before_status_py_lists_addons_as_a_map(microk8s):
    microk8s.__salt__ = with_status(fixture("status-1.16.yaml"))
    status = microk8s.status()
    assert (status["running"], status["high_availability"]) == (True, {"enabled": False, "nodes": []})
    assert {name: addon["status"] for name, addon in status["addons"].items()} == {
        "dns": "enabled",
        "rbac": "disabled",
        "storage": "enabled",
    }


@pytest.mark.parametrize(
    "text",
    [
        "- a list\n",
        "microk8s: running\n",
        "microk8s:\n  running: True\nhigh-availability:\n  enabled: True\n  nodes: [10.1.0.10]\n",
        "microk8s:\n  running: True\naddons:\n  - dns\n",
        "microk8s:\n  running: True\naddons: 3\n",
        # The worker sentence inside some other output is not the wrapper's message.
        "Error: This MicroK8s deployment is acting as a node in a cluster. Please use the control plane node. (7)\n",
    ],
)
def test_a_status_of_an_unknown_shape_is_an_error_never_a_type_error(microk8s, text):
    microk8s.__salt__ = with_status(text)
    with pytest.raises(CommandExecutionError, match="microk8s status"):
        microk8s.status()


def test_a_worker_is_known_by_its_lock_file_without_running_status(microk8s):
    cli = fake_cli({})
    microk8s.__salt__ = {
        **NO_LOCK,
        "cmd.run_all": cli,
        "file.file_exists": lambda path: path.endswith("/clustered.lock"),
    }
    assert microk8s.status()["worker"] is True
    assert cli.calls == []


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


def test_an_unknown_addon_is_an_error_not_disabled(microk8s):
    microk8s.__salt__ = with_status(fixture("status-single.yaml"))
    with pytest.raises(CommandExecutionError, match="microk8s has no addon named 'nope'"):
        microk8s.addon_status("nope")


def test_enable_passes_addon_arguments_in_microk8s_syntax(microk8s):
    cli = fake_cli({("enable", "dns:1.1.1.1,1.0.0.1"): ok("Enabling DNS")})
    microk8s.__salt__ = {"cmd.run_all": cli}
    assert microk8s.enable("dns", ["1.1.1.1", "1.0.0.1"]) == "Enabling DNS"
    assert cli.calls == [("microk8s", "enable", "dns:1.1.1.1,1.0.0.1")]


def test_add_node_issues_a_single_use_token_by_default_and_parses_json(microk8s):
    args = ("add-node", "--format", "json", "--token-ttl", "-1")
    microk8s.__salt__ = {"cmd.run_all": fake_cli({args: ok(fixture("add-node.json"))})}
    assert microk8s.add_node() == json.loads(fixture("add-node.json"))


def test_a_failing_join_raises_with_microk8s_message_and_never_shows_the_token(microk8s):
    url = "10.1.0.10:25000/2f1f9b8e0c7d4a3b9e6f5d4c3b2a1908/6c1f2e3d4b5a"
    join = ("join", url, "--worker")
    microk8s.__salt__ = {"cmd.run_all": fake_cli({join: {"retcode": 6, "stdout": fixture("error-already-known.txt")}})}
    with pytest.raises(CommandExecutionError) as raised:
        microk8s.join(url, worker=True)
    # The message: the command, its exit code and the line that says why (not join.py's progress).
    assert str(raised.value) == (
        "microk8s join 10.1.0.10:25000/<token> --worker failed (exit 6): "
        "Connection failed. the joining node (10.1.0.100) is already known to dqlite (504)."
    )
    # The whole output and the exit code, for callers to decide by.
    assert (raised.value.command, raised.value.retcode, raised.value.output) == (
        "microk8s join 10.1.0.10:25000/<token> --worker",
        6,
        fixture("error-already-known.txt").strip(),
    )


def test_a_traceback_is_summed_up_by_its_exception_and_the_error_survives_pickling(microk8s):
    import pickle

    microk8s.__salt__ = {
        "cmd.run_all": fake_cli(
            {("join", "u"): {"retcode": 1, "stdout": "", "stderr": fixture("error-unreachable.txt")}}
        )
    }
    with pytest.raises(CommandExecutionError) as raised:
        microk8s.join("u")
    assert (
        str(raised.value) == "microk8s join u failed (exit 1): ConnectionRefusedError: [Errno 111] Connection refused"
    )
    copy = pickle.loads(pickle.dumps(raised.value))
    assert (type(copy), str(copy), copy.retcode) == (type(raised.value), str(raised.value), 1)


def test_commands_are_logged_through_the_redacting_callback(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    microk8s.__salt__ = node.salt_functions()
    issued = microk8s.add_node()
    token = issued["token"].split("/")[0]
    with pytest.raises(CommandExecutionError) as raised:
        microk8s.join(issued["urls"][0])
    assert node.logged == ["microk8s add-node --format json --token-ttl -1", "microk8s join 10.1.0.10:25000/<token>"]
    assert token not in str(raised.value)


@pytest.mark.parametrize(
    ("fixture_name", "kind", "action"),
    [
        ("error-invalid-token.txt", "invalid-token", "renew"),
        ("error-already-known.txt", "already-known", "renew"),
        ("error-hostname-unresolved.txt", "hostname-unresolved", "renew"),
        ("error-unreachable.txt", "unreachable", "wait"),
        ("error-not-running.txt", "not-running", "wait"),
        ("status-worker.txt", "other", "fail"),
        # microk8s 1.29+: the agent wraps the already-known error in the dqlite one.
        ("error-already-known-1.35.txt", "already-known", "renew"),
        ("error-dqlite-unavailable.txt", "dqlite-unavailable", "renew"),
        ("error-fingerprint.txt", "fingerprint-mismatch", "renew"),
    ],
)
def test_join_errors_are_classified_with_what_to_do(microk8s, fixture_name, kind, action):
    assert microk8s.classify_error(fixture(fixture_name)) == {"kind": kind, "action": action}


# microk8s' own template (microk8s-resources/certs/csr.conf.template), its [ alt_names ] and after.
CSR_TEMPLATE = """[ alt_names ]
DNS.1 = kubernetes
DNS.2 = kubernetes.default
DNS.3 = kubernetes.default.svc
DNS.4 = kubernetes.default.svc.cluster
DNS.5 = kubernetes.default.svc.cluster.local
IP.1 = 127.0.0.1
IP.2 = 10.152.183.1
#MOREIPS

[ v3_ext ]
subjectAltName=@alt_names
"""
FLOATING_IP, LB_FLOATING_IP, LB_VIP = "203.0.113.10", "203.0.113.20", "10.1.0.5"


@pytest.fixture
def san_node(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    (node.home / "certs" / "csr.conf.template").write_text(CSR_TEMPLATE)
    microk8s.__salt__ = node.salt_functions()
    return node


def csr_template(node) -> str:
    return (node.home / "certs" / "csr.conf.template").read_text()


def test_extra_sans_are_added_in_order_counting_down_from_99_before_the_marker(microk8s, san_node):
    assert microk8s.extra_sans() == []
    assert microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP, LB_VIP]) == {
        "changed": True,
        "sans": [f"IP.99 = {FLOATING_IP}", f"IP.98 = {LB_FLOATING_IP}", f"IP.97 = {LB_VIP}"],
    }
    assert csr_template(san_node) == CSR_TEMPLATE.replace(
        "#MOREIPS\n", f"IP.99 = {FLOATING_IP}\nIP.98 = {LB_FLOATING_IP}\nIP.97 = {LB_VIP}\n#MOREIPS\n"
    )
    assert microk8s.extra_sans() == [FLOATING_IP, LB_FLOATING_IP, LB_VIP]


def test_setting_the_same_extra_sans_again_changes_nothing(microk8s, san_node):
    microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP])
    before = csr_template(san_node)
    assert microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP]) == {
        "changed": False,
        "sans": [f"IP.99 = {FLOATING_IP}", f"IP.98 = {LB_FLOATING_IP}"],
    }
    assert csr_template(san_node) == before


def test_extra_sans_are_replaced_and_extended(microk8s, san_node):
    microk8s.config_set_extra_sans(["203.0.113.9"])
    assert microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP, LB_VIP])["changed"] is True
    assert microk8s.extra_sans() == [FLOATING_IP, LB_FLOATING_IP, LB_VIP]
    assert "203.0.113.9" not in csr_template(san_node)
    # Same addresses, another order: the lines follow the new order.
    assert microk8s.config_set_extra_sans([LB_FLOATING_IP, FLOATING_IP, LB_VIP])["changed"] is True
    assert microk8s.extra_sans() == [LB_FLOATING_IP, FLOATING_IP, LB_VIP]


def test_extra_sans_no_longer_listed_are_removed(microk8s, san_node):
    microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP, LB_VIP])
    assert microk8s.config_set_extra_sans([FLOATING_IP]) == {"changed": True, "sans": [f"IP.99 = {FLOATING_IP}"]}
    assert csr_template(san_node) == CSR_TEMPLATE.replace("#MOREIPS\n", f"IP.99 = {FLOATING_IP}\n#MOREIPS\n")
    assert microk8s.config_set_extra_sans([]) == {"changed": True, "sans": []}
    assert csr_template(san_node) == CSR_TEMPLATE


def test_the_single_address_template_of_earlier_releases_is_taken_over(microk8s, san_node):
    # Earlier releases wrote only IP.99 (the master's floating IP): it stays, the others follow.
    san_node.home.joinpath("certs", "csr.conf.template").write_text(
        CSR_TEMPLATE.replace("#MOREIPS\n", f"IP.99 = {FLOATING_IP}\n#MOREIPS\n")
    )
    assert microk8s.extra_sans() == [FLOATING_IP]
    assert microk8s.config_set_extra_sans([FLOATING_IP])["changed"] is False
    assert microk8s.config_set_extra_sans([FLOATING_IP, LB_FLOATING_IP])["changed"] is True
    assert csr_template(san_node).count(f"IP.99 = {FLOATING_IP}") == 1


def test_extra_sans_keep_microk8s_own_lines_and_the_marker(microk8s, san_node):
    # A template with a host address microk8s numbered (IP.3) and a line of someone else's (IP.5).
    own = CSR_TEMPLATE.replace("IP.2 = 10.152.183.1\n", "IP.2 = 10.152.183.1\nIP.3 = 10.1.0.10\nIP.5 = 192.0.2.7\n")
    san_node.home.joinpath("certs", "csr.conf.template").write_text(own)
    microk8s.config_set_extra_sans([FLOATING_IP, LB_VIP])
    microk8s.config_set_extra_sans([LB_VIP])
    assert csr_template(san_node) == own.replace("#MOREIPS\n", f"IP.99 = {LB_VIP}\n#MOREIPS\n")
    assert microk8s.extra_sans() == [LB_VIP]


def test_a_template_without_the_marker_is_an_error_not_a_guess(microk8s, san_node):
    san_node.home.joinpath("certs", "csr.conf.template").write_text("[ alt_names ]\nDNS.1 = kubernetes\n")
    assert microk8s.extra_sans() == []
    with pytest.raises(CommandExecutionError, match=r"csr\.conf\.template has no #MOREIPS marker to add a SAN at$"):
        microk8s.config_set_extra_sans([FLOATING_IP])
    assert csr_template(san_node) == "[ alt_names ]\nDNS.1 = kubernetes\n"


@pytest.mark.parametrize(
    ("addresses", "message"),
    [
        (["203.0.113.300"], "'203.0.113.300' is not an IPv4 address: an extra SAN must be one"),
        (["2001:db8::1"], "'2001:db8::1' is not an IPv4 address: an extra SAN must be one"),
        ([FLOATING_IP, "api.lab.example"], "'api.lab.example' is not an IPv4 address: an extra SAN must be one"),
        ([None], "None is not an IPv4 address: an extra SAN must be one"),
        (
            [FLOATING_IP, FLOATING_IP],
            f"{FLOATING_IP} is listed twice in the extra SANs ['{FLOATING_IP}', '{FLOATING_IP}']",
        ),
        (FLOATING_IP, f"the extra SANs must be a list of IPv4 addresses, not '{FLOATING_IP}'"),
        ([f"10.0.0.{n}" for n in range(11)], "at most 10 extra SANs are managed, not 11: "),
    ],
)
def test_anything_but_distinct_ipv4_addresses_is_refused_and_the_template_kept(microk8s, san_node, addresses, message):
    with pytest.raises(CommandExecutionError) as raised:
        microk8s.config_set_extra_sans(addresses)
    assert str(raised.value).startswith(message)
    assert csr_template(san_node) == CSR_TEMPLATE


@pytest.mark.parametrize(
    ("call", "argv", "timeout"),
    [
        (lambda m: m.start(), ("start",), 300),
        (lambda m: m.wait_ready(60), ("status", "--wait-ready", "--timeout", "60"), 90),
        (lambda m: m.disable("registry"), ("disable", "registry"), 300),
        (lambda m: m.leave(), ("leave",), 300),
        (lambda m: m.remove_node("10.1.0.100"), ("remove-node", "10.1.0.100"), 300),
        (lambda m: m.remove_node("10.1.0.100", force=True), ("remove-node", "10.1.0.100", "--force"), 300),
        (lambda m: m.refresh_certs(), ("refresh-certs", "--cert", "server.crt"), 300),
        (lambda m: m.join("10.1.0.10:25000/t/c"), ("join", "10.1.0.10:25000/t/c"), 600),
    ],
)
def test_each_cli_wrapper_runs_one_argument_list_with_a_timeout(microk8s, call, argv, timeout):
    seen = []

    def run_all(cmd, python_shell=True, timeout=None, ignore_retcode=False, log_callback=None):
        seen.append((tuple(cmd), python_shell, timeout, ignore_retcode, log_callback))
        return ok("done")

    microk8s.__salt__ = {"cmd.run_all": run_all}
    result = call(microk8s)
    assert result == (True if argv[0] == "status" else "done")
    assert seen == [(("microk8s", *argv), False, timeout, True, importlib.import_module("microk8s._cli").redact)]


def test_add_node_passes_a_chosen_token_and_ttl(microk8s):
    args = ("add-node", "--format", "json", "--token-ttl", "600", "--token", "a" * 32)
    cli = fake_cli({args: ok(fixture("add-node.json"))})
    microk8s.__salt__ = {"cmd.run_all": cli}
    assert microk8s.add_node(token="a" * 32, ttl=600)["urls"][0].startswith("10.1.0.10:25000/")
    assert cli.calls == [("microk8s", *args)]


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
            "unschedulable": False,
            "version": None,
            "boot_id": None,
        },
        {
            "name": "k8s-worker-0",
            "address": "10.1.0.100",
            "addresses": ["10.1.0.100"],
            "ready": False,
            "unschedulable": False,
            "version": None,
            "boot_id": None,
        },
    ]
    assert microk8s.cluster_check(1) == {"ready": ["k8s-master"], "expected": 1}
    with pytest.raises(CommandExecutionError, match=r"^only 1 of 3 nodes are Ready: k8s-master$"):
        microk8s.cluster_check()


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


def test_the_token_file_tells_single_use_from_expiring_tokens(microk8s):
    tokens_module = importlib.import_module("microk8s._tokens")
    tokens = tokens_module.parse_cluster_tokens(fixture("cluster-tokens.txt"))
    assert tokens == {"2f1f9b8e0c7d4a3b9e6f5d4c3b2a1908": None, "9a8b7c6d5e4f30211f2e3d4c5b6a7980": 1700003600}
    assert tokens_module.token_is_live("2f1f9b8e0c7d4a3b9e6f5d4c3b2a1908", tokens, now=2e9)
    assert tokens_module.token_is_live("9a8b7c6d5e4f30211f2e3d4c5b6a7980", tokens, now=1700000000)
    # Expiring within the margin counts as spent: a joiner could not use it in time.
    assert not tokens_module.token_is_live("9a8b7c6d5e4f30211f2e3d4c5b6a7980", tokens, now=1700003500)
    assert not tokens_module.token_is_live("unknown", tokens, now=0)


def test_the_join_url_on_the_masters_private_address_is_preferred(microk8s):
    join = importlib.import_module("microk8s._join")
    urls = json.loads(fixture("add-node.json"))["urls"]
    assert join.url_for(urls, "10.0.0.11") == urls[1]
    assert join.url_for(urls, "192.0.2.1") == urls[0]
    with pytest.raises(CommandExecutionError, match="without any URL"):
        join.url_for([], "10.1.0.10")


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

        def pillar_get(key, default=None):
            node = settings
            for part in key.split(":"):
                if not isinstance(node, dict) or part not in node:
                    return default
                node = node[part]
            return node

        self.module.__opts__ = {"id": minion_id, "cachedir": str(self.cachedir)}
        self.module.__salt__ = (node or self.master).salt_functions(
            **{
                "pillar.get": pillar_get,
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


def test_the_master_issues_one_token_per_pending_joiner_and_publishes_no_raw_token(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    assert master.join_tokens() == {}
    assert master.pending_joiners() == [CP_JOINER, WORKER]
    assert master.join_token_plan() == {"issuer": MASTER, "issue": [CP_JOINER, WORKER], "withdraw": [], "serials": {}}

    assert master.issue_join_tokens([CP_JOINER, WORKER]) == {CP_JOINER: 1, WORKER: 1}
    published = master.join_tokens()
    assert set(published) == {CP_JOINER, WORKER}
    assert published[WORKER]["worker"] is True and published[CP_JOINER]["worker"] is False
    assert published[WORKER]["expires"] is None
    assert published[WORKER]["urls"][0].startswith("10.1.0.10:25000/")
    assert "token" not in published[WORKER]
    assert published[WORKER]["urls"] != published[CP_JOINER]["urls"]
    ledger_file = cluster.cachedir / "kube-on-os" / "microk8s-join-tokens.json"
    assert stat.S_IMODE(ledger_file.stat().st_mode) == 0o600
    # Both tokens are live single-use lines in microk8s' own token file.
    tokens = (cluster.master.home / "credentials" / "cluster-tokens.txt").read_text().splitlines()
    assert sorted(tokens) == sorted(entry["token"] for entry in cluster.ledger()["tokens"].values())
    assert master.join_token_plan() == {
        "issuer": MASTER,
        "issue": [],
        "withdraw": [],
        "serials": {CP_JOINER: 1, WORKER: 1},
    }


def test_a_joined_node_has_its_token_withdrawn_and_a_spent_one_is_reissued(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER, WORKER])
    urls = master.join_tokens()
    assert cluster.cp_joiner.run("join", urls[CP_JOINER]["urls"][0]).returncode == 0
    # The worker's token is spent by a failed attempt: the master's name lookup refuses it.
    (cluster.master.home / "etc-hosts").write_text("10.1.0.10 k8s-master\n")
    failed = cluster.worker.run("join", urls[WORKER]["urls"][0], "--worker")
    assert failed.returncode == 6
    assert master.classify_error(failed.stdout)["kind"] == "hostname-unresolved"
    assert master.join_token_plan() == {
        "issuer": MASTER,
        "issue": [WORKER],
        "withdraw": [CP_JOINER],
        "serials": {CP_JOINER: 1, WORKER: 1},
    }
    assert master.issue_join_tokens([WORKER], [CP_JOINER]) == {WORKER: 2, CP_JOINER: None}
    assert set(master.join_tokens()) == {WORKER}


def test_issuing_for_an_unexpected_minion_is_refused(microk8s, tmp_path):
    master = Cluster(microk8s, tmp_path).as_master()
    with pytest.raises(
        CommandExecutionError, match=r"not expected joiners according to pillar microk8s:nodes: \['x'\]"
    ):
        master.issue_join_tokens(["x"])


def test_renewal_after_an_invalid_token_issues_a_newer_one_once(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([WORKER])
    renewed = master.renew_join_token(WORKER, "invalid-token", serial=1)
    assert renewed == {"joiner": WORKER, "renewed": True, "forgot": False, "hosts": False, "serial": 2}
    assert cluster.calls == ["mine.update"]
    # The same report arriving twice (two events for serial 1) renews once.
    assert master.renew_join_token(WORKER, "invalid-token", serial=1) == {
        "joiner": WORKER,
        "renewed": False,
        "forgot": False,
        "hosts": False,
        "serial": 2,
    }
    assert master.join_tokens()[WORKER]["serial"] == 2


def test_renewal_for_a_rebuilt_node_forgets_its_member_at_the_pillar_address(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER])
    assert cluster.cp_joiner.run("join", master.join_tokens()[CP_JOINER]["urls"][0]).returncode == 0
    # The node is rebuilt: a fresh $SNAP_DATA, while dqlite still lists its address.
    for path in sorted(cluster.cp_joiner.home.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    master.issue_join_tokens([CP_JOINER])
    refused = cluster.cp_joiner.run("join", master.join_tokens()[CP_JOINER]["urls"][0])
    assert master.classify_error(refused.stdout)["kind"] == "already-known"
    renewed = master.renew_join_token(CP_JOINER, "already-known", serial=2)
    assert renewed == {"joiner": CP_JOINER, "renewed": True, "forgot": True, "hosts": False, "serial": 3}
    assert "10.1.0.100:19001" not in json.dumps(master.members())
    assert cluster.cp_joiner.run("join", master.join_tokens()[CP_JOINER]["urls"][0]).returncode == 0


def test_renewal_after_a_name_lookup_failure_refreshes_the_masters_hosts_file(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([WORKER])
    renewed = master.renew_join_token(WORKER, "hostname-unresolved", serial=1)
    assert renewed == {"joiner": WORKER, "renewed": True, "forgot": False, "hosts": True, "serial": 2}
    assert cluster.calls == [("state.sls", "core.hosts", True), "mine.update"]


def test_a_joiner_without_a_published_token_gets_one_unless_it_holds_a_live_one(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    assert master.renew_join_token(WORKER, "no-token", serial=0) == {
        "joiner": WORKER,
        "renewed": True,
        "forgot": False,
        "hosts": False,
        "serial": 1,
    }
    # Asked again while that token is live: it is only published again.
    assert master.renew_join_token(WORKER, "no-token", serial=0) == {
        "joiner": WORKER,
        "renewed": False,
        "forgot": False,
        "hosts": False,
        "serial": 1,
    }
    assert cluster.calls == ["mine.update", "mine.update"]
    assert len((cluster.master.home / "credentials" / "cluster-tokens.txt").read_text().splitlines()) == 1


@pytest.mark.parametrize(
    ("minion_id", "joiner", "reason", "message"),
    [
        (CP_JOINER, WORKER, "invalid-token", rf"{CP_JOINER} does not issue join tokens: {MASTER} does"),
        (MASTER, "intruder.lab.example", "invalid-token", "intruder.lab.example is not an expected joiner"),
        (
            MASTER,
            WORKER,
            "unreachable",
            "a token is only renewed after invalid-token, already-known, hostname-unresolved, dqlite-unavailable, "
            "fingerprint-mismatch",
        ),
    ],
)
def test_renewal_refuses_what_it_must_not_do(microk8s, tmp_path, minion_id, joiner, reason, message):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master(minion_id)
    with pytest.raises(CommandExecutionError, match=message):
        master.renew_join_token(joiner, reason, serial=1)
    assert cluster.calls == []
    assert not (cluster.master.home / "credentials" / "cluster-tokens.txt").exists()


def test_a_joiner_reads_its_own_token_from_the_mine_and_asks_for_renewal_by_event(microk8s):
    published = {
        MASTER: {WORKER: {"urls": ["10.0.0.11:25000/t/c", "10.1.0.10:25000/t/c"], "serial": 4, "worker": True}}
    }
    events = []
    microk8s.__opts__ = {"id": WORKER}
    microk8s.__salt__ = {
        "mine.get": lambda target, function: (
            published if (target, function) == (MASTER, "microk8s.join_tokens") else {}
        ),
        "mine.update": lambda: events.append("mine.update"),
        "event.send": lambda tag, data: events.append((tag, data)) or True,
    }
    assert microk8s.published_token(MASTER, "10.1.0.10") == {"url": "10.1.0.10:25000/t/c", "serial": 4, "worker": True}
    microk8s.__opts__ = {"id": CP_JOINER}
    assert microk8s.published_token(MASTER, "10.1.0.10") is None

    assert microk8s.request_token_renewal(MASTER, "invalid-token", 4) is True
    assert microk8s.request_token_renewal(MASTER, "hostname-unresolved", 5) is True
    tag = "kube-on-os/microk8s/join-token/renew"
    assert events == [
        (tag, {"master": MASTER, "reason": "invalid-token", "serial": 4}),
        "mine.update",
        (tag, {"master": MASTER, "reason": "hostname-unresolved", "serial": 5}),
    ]


def test_virtual_refuses_without_the_binary(microk8s, monkeypatch):
    monkeypatch.setattr(microk8s.salt.utils.path, "which", lambda _name: None)
    assert microk8s.__virtual__() == (False, "the microk8s execution module needs the microk8s binary on PATH")


def test_the_salt_loader_loads_the_package_as_one_module(tmp_path):
    """salt-call --local loads salt/_modules/microk8s/ with its submodules, against a fake binary."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "microk8s"
    fake.write_text(f"#!/bin/sh\ncat '{FIXTURES / 'status-ha.yaml'}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", env=env).call

    call("saltutil.sync_modules")
    status = call("microk8s.status")
    assert status["running"] is True
    assert [n["role"] for n in status["high_availability"]["nodes"]] == ["voter", "voter", "voter", "standby"]
    assert call("microk8s.addon_status", "dns") == "enabled"


def test_addon_enabled_through_the_real_loader_changes_once_then_nothing(tmp_path):
    """state.single microk8s.addon_enabled twice against a stateful fake microk8s."""
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", env=node.env).call

    call("saltutil.sync_all")
    first = next(iter(call("state.single", "microk8s.addon_enabled", "dns").values()))
    assert first["result"] is True
    assert first["changes"] == {"dns": {"old": "disabled", "new": "enabled"}}
    second = next(iter(call("state.single", "microk8s.addon_enabled", "dns").values()))
    assert second["result"] is True
    assert second["changes"] == {}
    assert (node.home / "calls.log").read_text().count("enable dns\n") == 1


def test_refreshes_held_through_the_real_loader_are_held_once_and_stop_auto_refresh_not_the_roll(tmp_path):
    """
    state.single microk8s.refreshes_held twice against the fake's snapd (snapd.py beside the
    rehearsal's fake): predicted, then `snap refresh --hold microk8s` once; snapd's auto-refresh
    then leaves the node alone, and a refresh asked for by name (the roll's) still goes ahead.
    """
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", env=node.env).call
    call("saltutil.sync_all")

    def held(*extra: str) -> dict:
        return next(iter(call("state.single", "microk8s.refreshes_held", "microk8s", *extra).values()))

    def outcome(state: dict) -> tuple:
        return state["result"], state["changes"], state["comment"]

    change = {"refreshes_held": {"old": False, "new": True}}
    assert outcome(held("test=True")) == (None, change, "snapd's own refreshes of microk8s would be held")
    assert outcome(held()) == (True, change, "held snapd's own refreshes of microk8s: only the roll refreshes it")
    assert outcome(held()) == (True, {}, "snapd's own refreshes of microk8s are held")
    assert (node.home / "calls.log").read_text().count("snap refresh --hold microk8s\n") == 1
    before = node.state()
    assert node.run("fake-auto-refresh").returncode == 0
    assert node.state() == before
    assert call("microk8s.refresh", "1.29/stable") == {"old": "1.28/stable", "new": "1.29/stable"}


def refreshing_node(tmp_path, faults: dict) -> tuple[FakeMicrok8s, LocalMinion]:
    """A fake node at 1.28 with snapd's ``faults`` (fake/faults.json), and a minion with the modules synced."""
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    minion = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", env=node.env)
    minion.call("saltutil.sync_all")
    (node.home / "fake" / "faults.json").write_text(json.dumps(faults))
    return node, minion


def test_a_refresh_refused_by_a_change_in_progress_waits_it_out_and_is_asked_again(tmp_path):
    """
    snapd refuses a change to microk8s while another one runs (the fake's snapd.py: an
    auto-refresh started before the hold, or an operator's refresh): the roll's refresh waits
    for that change (`snap watch --last=auto-refresh?`) and asks again, then waits for its own
    change to finish, by its id, not for the snap client that a timeout would cut off.
    """
    node, minion = refreshing_node(tmp_path, {"auto_refresh_in_progress": 2})
    call = minion.call

    assert call("microk8s.refresh", "1.29/stable") == {"old": "1.28/stable", "new": "1.29/stable"}
    snap_calls = [
        line
        for line in (node.home / "calls.log").read_text().splitlines()
        if line.startswith("snap refresh microk8s") or line.startswith("snap watch")
    ]
    assert snap_calls == [
        "snap refresh microk8s --channel=1.29/stable --no-wait",
        "snap watch --last=auto-refresh?",
        "snap refresh microk8s --channel=1.29/stable --no-wait",
        "snap watch --last=auto-refresh?",
        "snap refresh microk8s --channel=1.29/stable --no-wait",
        f"snap watch {node.state()['change_seq']}",
    ]
    assert call("microk8s.installed")["tracking"] == "1.29/stable"


def test_a_refresh_refused_past_the_bound_fails_naming_the_change_in_progress(tmp_path):
    """Three refusals in a row fail the refresh, naming what snapd refused it for; the snap stays."""
    _, minion = refreshing_node(tmp_path, {"auto_refresh_in_progress": 5})
    call = minion.call

    error = minion.call_error("microk8s.refresh", "1.29/stable")
    assert error == (
        "snap refresh microk8s --channel=1.29/stable was refused 3 times, each time by a change in progress"
        ' (snapd lets one change at a time touch a snap): error: snap "microk8s" has "auto-refresh" change in progress'
    )
    assert call("microk8s.installed")["tracking"] == "1.28/stable"


def test_a_refresh_whose_change_fails_is_an_error_naming_the_change(tmp_path):
    """
    snapd's change fails (a task of it, e.g. starting the new revision's services) and snapd
    undoes it: the error names the change, whose tasks `snap change ID` lists, and the snap keeps
    its channel.
    """
    node, minion = refreshing_node(tmp_path, {"refresh_fails": 1})
    call = minion.call

    error = minion.call_error("microk8s.refresh", "1.29/stable")
    change = node.state()["change_seq"]
    assert error == (
        f"snap refresh microk8s --channel=1.29/stable: snapd's change {change} did not complete (`snap change {change}`"
        " shows its tasks): error: cannot perform the following tasks:"
        ' - Start snap "microk8s" (7001) services (the fake\'s refresh_fails)'
    )
    assert call("microk8s.installed")["tracking"] == "1.28/stable"


def test_a_hold_snapd_refuses_is_an_error_naming_the_snapd_it_needs(microk8s):
    refused = {"retcode": 64, "stdout": "", "stderr": "error: unknown flag `hold'"}
    microk8s.__salt__ = {"cmd.run_all": fake_cli({("refresh", "--hold", "microk8s"): refused})}
    with pytest.raises(
        CommandExecutionError,
        match=r"^snap refresh --hold microk8s failed \(it needs snapd 2\.58 or later\): error: unknown flag `hold'$",
    ):
        microk8s.hold_refreshes()
    microk8s.__salt__ = {"cmd.run_all": fake_cli({})}
    with pytest.raises(CommandExecutionError, match=r"^microk8s is not installed: there are no refreshes to hold$"):
        microk8s.refreshes_held()


def test_extra_sans_through_the_real_loader_reach_the_certificate_once_refreshed(tmp_path):
    """
    state.single microk8s.extra_sans, then refresh-certs as certificates.sls runs it on changes,
    against the fake microk8s: its server.crt then names every API address (server_cert.py
    reproduces refresh_csr_conf; gen_server_cert).
    """
    server_cert = load_module(
        "server_cert", ROOT / "__tests__" / "doubles" / "rehearsal" / "fake-microk8s" / "server_cert.py"
    )
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    grains = {"microk8s.snap_data": str(node.home)}
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", grains=grains, env=node.env).call
    call("saltutil.sync_all")
    addresses = f"addresses={json.dumps([FLOATING_IP, LB_FLOATING_IP, LB_VIP])}"

    def extra_sans(*extra: str) -> dict:
        return next(iter(call("state.single", "microk8s.extra_sans", "api", addresses, *extra).values()))

    predicted = extra_sans("test=True")
    assert (predicted["result"], predicted["changes"]) == (
        None,
        {"extra_sans": {"old": [], "new": [FLOATING_IP, LB_FLOATING_IP, LB_VIP]}},
    )
    assert extra_sans()["changes"] == predicted["changes"]
    assert extra_sans()["changes"] == {}
    call("microk8s.refresh_certs")
    certificate = (node.home / "certs" / "server.crt").read_text()
    assert [name for name in server_cert.subject_alt_names(certificate) if name.startswith("IP Address:")] == [
        "IP Address:127.0.0.1",
        f"IP Address:{FLOATING_IP}",
        f"IP Address:{LB_FLOATING_IP}",
        f"IP Address:{LB_VIP}",
        "IP Address:10.1.0.10",
    ]


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


# join_cluster: the joiner's retry loop (the state microk8s.cluster_joined calls it once).

RENEW_TAG = "kube-on-os/microk8s/join-token/renew"


class MasterBehindTheMine:
    """
    What a joiner's ``__salt__`` reaches: the master's mine entry for this node, ``microk8s
    join`` (``outcomes``: None joins; a fixture name fails with microk8s' output of it, or a
    literal text), and the renewal event, after which the master publishes the next serial
    once ``renew_after`` more mine reads have passed, as the reactor would.
    """

    def __init__(self, outcomes, published=True, renew_after=0, unsettled=0):
        self.outcomes = list(outcomes)
        self.serial = 1 if published else None
        self.renew_after = renew_after
        self.pending_renewal = None
        self.actions = []
        # After a join that exited 0: how many membership readings fail (status exits 1 while
        # microk8s restarts its services) before the worker lock shows.
        self.unsettled = unsettled
        self.joined = False

    def salt_functions(self) -> dict:
        def mine_get(target, function):
            assert (target, function) == (MASTER, "microk8s.join_tokens")
            if self.pending_renewal is not None:
                if self.pending_renewal == 0:
                    self.serial = (self.serial or 0) + 1
                    self.pending_renewal = None
                else:
                    self.pending_renewal -= 1
            if self.serial is None:
                return {MASTER: {}}
            urls = [f"10.0.0.11:25000/token-{self.serial}/c", f"10.1.0.10:25000/token-{self.serial}/c"]
            return {MASTER: {WORKER: {"urls": urls, "serial": self.serial, "worker": True, "expires": None}}}

        def run_all(cmd, python_shell=True, timeout=None, ignore_retcode=False, log_callback=None):
            assert python_shell is False and timeout
            assert cmd[:2] == ["microk8s", "join"]
            self.actions.append(("join", cmd[2], "--worker" in cmd))
            outcome = self.outcomes.pop(0)
            if outcome is None:
                self.joined = True
                return ok("Successfully joined the cluster.")
            text = fixture(outcome) if (FIXTURES / outcome).exists() else outcome
            return {"retcode": 1, "stdout": text, "stderr": ""}

        def event_send(tag, data):
            assert tag == RENEW_TAG and data["master"] == MASTER
            self.actions.append(("renew", data["reason"], data["serial"]))
            self.pending_renewal = self.renew_after
            return True

        def worker_lock(path):
            if path.endswith("/certs/ca.crt"):
                return False
            assert path.endswith("/var/lock/clustered.lock")
            if self.joined and self.unsettled:
                self.unsettled -= 1
                self.actions.append(("unsettled",))
                raise CommandExecutionError("microk8s status failed (exit 1): microk8s is not running")
            return self.joined

        return {
            "mine.get": mine_get,
            "mine.update": lambda: self.actions.append(("mine.update",)),
            "event.send": event_send,
            "cmd.run_all": run_all,
            "config.get": lambda key, default=None: default,
            "file.file_exists": worker_lock,
        }


WORKER_MEMBERSHIP = {"role": "worker", "members": [], "ca": None}


@pytest.fixture
def sleeps(monkeypatch, microk8s):
    waited = []
    monkeypatch.setattr(importlib.import_module("microk8s._join").time, "sleep", waited.append)
    monkeypatch.setattr(importlib.import_module("microk8s._membership").time, "sleep", waited.append)
    return waited


def join_cluster(microk8s, master: MasterBehindTheMine, attempts=8, interval=5, max_interval=60):
    microk8s.__salt__ = master.salt_functions()
    microk8s.__opts__ = {"id": WORKER}
    return microk8s.join_cluster(MASTER, "10.1.0.10", True, attempts, interval, max_interval)


def test_join_cluster_joins_at_the_first_try_on_the_masters_private_address(microk8s, sleeps):
    master = MasterBehindTheMine([None])
    assert join_cluster(microk8s, master) == {"attempts": 1, "serial": 1, "membership": WORKER_MEMBERSHIP}
    assert master.actions == [("join", "10.1.0.10:25000/token-1/c", True)]
    assert sleeps == []


@pytest.mark.parametrize(
    ("fixture_name", "kind"),
    [
        ("error-invalid-token.txt", "invalid-token"),
        ("error-already-known.txt", "already-known"),
        ("error-hostname-unresolved.txt", "hostname-unresolved"),
        # Transient, but after ConsumeClusterToken: the token is spent as well.
        ("error-dqlite-unavailable.txt", "dqlite-unavailable"),
        # The token is unspent; its URL names an older server.crt, so the master republishes it.
        ("error-fingerprint.txt", "fingerprint-mismatch"),
    ],
)
def test_a_spent_token_is_renewed_through_the_master_and_the_join_retried(microk8s, sleeps, fixture_name, kind):
    # The failed attempt consumed the single-use token (or it expired): retrying it cannot work.
    master = MasterBehindTheMine([fixture_name, None], renew_after=1)
    assert join_cluster(microk8s, master) == {"attempts": 3, "serial": 2, "membership": WORKER_MEMBERSHIP}
    # After a failed name lookup the joiner publishes its addresses before it asks.
    published = [("mine.update",)] if kind == "hostname-unresolved" else []
    assert master.actions == [
        ("join", "10.1.0.10:25000/token-1/c", True),
        *published,
        ("renew", kind, 1),
        ("join", "10.1.0.10:25000/token-2/c", True),
    ]
    # One wait while the master had not renewed yet, then one with the new token.
    assert sleeps == [5, 10]


@pytest.mark.parametrize("fixture_name", ["error-unreachable.txt", "error-not-running.txt"])
def test_an_unready_master_is_waited_for_with_growing_bounded_backoff(microk8s, sleeps, fixture_name):
    master = MasterBehindTheMine([fixture_name] * 5 + [None])
    assert join_cluster(microk8s, master, interval=5, max_interval=30) == {
        "attempts": 6,
        "serial": 1,
        "membership": WORKER_MEMBERSHIP,
    }
    assert [a[0] for a in master.actions] == ["join"] * 6
    assert sleeps == [5, 10, 20, 30, 30]


def test_a_master_that_never_publishes_a_token_fails_clearly_after_the_attempts(microk8s, sleeps):
    master = MasterBehindTheMine([], published=False, renew_after=99)
    with pytest.raises(CommandExecutionError) as raised:
        join_cluster(microk8s, master, attempts=4, interval=2, max_interval=5)
    assert str(raised.value) == (
        f"not joined to {MASTER} after 4 attempts; last: {MASTER} has published no join token "
        "for this node (is its highstate done?)"
    )
    assert sleeps == [2, 4, 5]
    assert master.actions == [("renew", "no-token", 0)]


def test_a_rebuilt_node_asks_for_a_token_then_has_its_stale_member_forgotten(microk8s, sleeps):
    # The master counts the rebuilt node's address as joined, so it published nothing for it.
    master = MasterBehindTheMine(["error-already-known.txt", None], published=False)
    assert join_cluster(microk8s, master)["serial"] == 2
    assert master.actions == [
        ("renew", "no-token", 0),
        ("join", "10.1.0.10:25000/token-1/c", True),
        ("renew", "already-known", 1),
        ("join", "10.1.0.10:25000/token-2/c", True),
    ]


def test_a_renewal_that_never_comes_fails_clearly(microk8s, sleeps):
    master = MasterBehindTheMine(["error-invalid-token.txt"], renew_after=99)
    with pytest.raises(CommandExecutionError) as raised:
        join_cluster(microk8s, master, attempts=3)
    assert (
        str(raised.value)
        == f"not joined to {MASTER} after 3 attempts; last: {MASTER} has not renewed spent join token #1"
    )
    assert master.actions == [("join", "10.1.0.10:25000/token-1/c", True), ("renew", "invalid-token", 1)]


def test_an_error_retrying_cannot_fix_fails_at_once_without_the_token(microk8s, sleeps):
    master = MasterBehindTheMine(["not possible to join. This is not an HA MicroK8s cluster"])
    with pytest.raises(CommandExecutionError) as raised:
        join_cluster(microk8s, master)
    assert str(raised.value) == (
        f"joining {MASTER} failed (other), retrying cannot help: microk8s join 10.1.0.10:25000/<token> --worker "
        "failed (exit 1): not possible to join. This is not an HA MicroK8s cluster"
    )
    assert sleeps == []


# The public functions are what the pillar's mine function, the reactor, the states, the
# orchestration and the provisioners call by name: their names and signatures are a contract.
PUBLIC = {
    "status": "()",
    "is_worker": "()",
    "is_running": "()",
    "start": "()",
    "wait_ready": "(timeout: int = 300)",
    "addons": "()",
    "addon_status": "(name: str)",
    "enable": "(name: str, args: list[str] | None = None)",
    "disable": "(name: str)",
    "refresh_certs": "(cert: str = 'server.crt')",
    # microk8s.kubelet_external_cloud_provider calls them.
    "kubelet_cloud_provider": "()",
    "set_kubelet_external_cloud_provider": "(external: bool)",
    # microk8s.apiserver_advertise_address calls them.
    "apiserver_advertise_address": "()",
    "set_apiserver_advertise_address": "(address: str)",
    "restart_kubelite": "(timeout: int = 300)",
    "extra_sans": "()",
    "config_set_extra_sans": "(addresses: list[str])",
    "node_roles": "()",
    "members": "()",
    "nodes": "()",
    "issuer": "()",
    "membership": "()",
    "leave": "()",
    "remove_node": "(node: str, force: bool = False)",
    "forget_node": "(address: str)",
    # remove-node.sh calls it: salt MASTER microk8s.vacate_node ADDRESS DRAIN_SECONDS.
    "vacate_node": "(address: str, timeout: int = 300)",
    "cluster_check": "(expected_nodes: int | None = None)",
    "add_node": "(token: str | None = None, ttl: int = -1)",
    "join_tokens": "()",
    "pending_joiners": "()",
    "join_token_plan": "(ttl: int = -1)",
    "issue_join_tokens": "(joiners: list[str], withdraw: list[str] | None = None, ttl: int = -1)",
    "renew_join_token": "(joiner: str, reason: str, serial: int | None = None)",
    "join": "(url: str, worker: bool = False)",
    "classify_error": "(message: str)",
    "published_token": "(master: str, master_address: str | None = None)",
    "request_token_renewal": "(master: str, reason: str, serial: int)",
    # upgrade.sh calls it with microk8s_channel, or with none when it is unset; orch.upgrade one minor at a time.
    "upgrade_plan": "(channel: str | None = None, one_minor: bool = False)",
    "release_check": "(channel: str | None = None)",
    "installed": "()",
    "refresh": "(channel: str)",
    # microk8s.refreshes_held (microk8s.install) calls them.
    "refreshes_held": "()",
    "hold_refreshes": "()",
    "drain_node": "(address: str, channel: str, timeout: int = 300)",
    "uncordon_node": "(address: str)",
    "wait_node_ready": "(address: str, channel: str, timeout: int = 600, interval: float = 2)",
    # microk8s.nodes_labelled (orch.deploy's last step) calls them.
    "node_metadata": "(address: str)",
    "label_plan": "()",
    "label_node": "(address: str, labels: dict | None = None, taints: list | None = None)",
    # microk8s.cloud_provider's states call them.
    "cloud_config_plan": "(options: dict | None = None)",
    "cloud_config_apply": "(options: dict | None = None)",
    "manifests_apply": "(sources: list[str], dry_run: bool = False)",
    "provider_id_plan": "()",
    "set_provider_id": "(node: str, provider_id: str)",
    "initialization_plan": "()",
    "wait_initialized": "(timeout: float = 300, interval: float = 5)",
    "mark_uninitialized": "(node: str, marked: bool = True)",
    "storage_class_plan": "(name: str)",
    "default_storage_class": "(name: str)",
    # orch.reboot calls them.
    "drain_for_reboot": "(address: str, timeout: int = 300)",
    "drain_for_replacement": "(address: str, timeout: int = 300)",
    "uncordon_replaced": "()",
    "wait_node_rebooted": "(address: str, timeout: int = 600, interval: float = 2)",
    "join_cluster": (
        "(master: str, master_address: str | None, worker: bool, attempts: int, interval: float, max_interval: float)"
    ),
}


def test_the_public_functions_keep_their_names_and_signatures(microk8s):
    public = {
        name: str(inspect.signature(function, eval_str=True)).split(" -> ")[0]
        for name, function in vars(microk8s).items()
        if inspect.isfunction(function) and not name.startswith("_") and function.__module__ == microk8s.__name__
    }
    assert public == PUBLIC


def test_after_a_join_the_membership_is_read_again_while_microk8s_restarts(microk8s, sleeps):
    master = MasterBehindTheMine([None], unsettled=2)
    assert join_cluster(microk8s, master) == {"attempts": 1, "serial": 1, "membership": WORKER_MEMBERSHIP}
    assert master.actions == [("join", "10.1.0.10:25000/token-1/c", True), ("unsettled",), ("unsettled",)]
    assert sleeps == [5, 5]


def test_a_join_whose_membership_never_settles_fails_with_the_last_reading(microk8s, sleeps):
    master = MasterBehindTheMine([None], unsettled=99)
    with pytest.raises(CommandExecutionError) as raised:
        join_cluster(microk8s, master)
    assert str(raised.value) == (
        "microk8s join reported success, but this node is not a worker after 12 readings 5 s apart; "
        "last: microk8s status failed (exit 1): microk8s is not running"
    )
    assert sleeps == [5] * 11


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


@pytest.mark.parametrize("ttl", [0, 60, 120, 299, "soon", True, None])
def test_a_token_ttl_that_would_renew_on_every_run_is_refused(microk8s, tmp_path, ttl):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master(pillar={"microk8s": {**PILLAR, "join": {"token_ttl": ttl}}})
    message = (
        r"^pillar microk8s:join:token_ttl must be -1 \(single-use\) or at least 300 seconds "
        r"\(a token expiring within 120 s is renewed on every run\), got "
    )
    with pytest.raises(CommandExecutionError, match=message):
        master.join_token_plan(ttl)
    with pytest.raises(CommandExecutionError, match=message):
        master.issue_join_tokens([WORKER], ttl=ttl)
    with pytest.raises(CommandExecutionError, match=message):
        master.renew_join_token(WORKER, "invalid-token", serial=1)
    assert not (cluster.master.home / "credentials" / "cluster-tokens.txt").exists()
    assert master.join_token_plan(300)["issue"] == [CP_JOINER, WORKER]


CP = {"role": "control-plane", "members": ["10.1.0.10", "10.1.0.100"], "ca": "ca-of-the-cluster"}
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


def test_a_voter_issues_for_the_rebuilt_master_and_withdraws_once_the_master_issues_again(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    voter = cluster.as_master(CP_JOINER, node=cluster.cp_joiner)
    # While the master stands alone after its rebuild, the voter in the cluster issues: to the master too.
    cluster.reports = {MASTER: {"role": "standalone", "members": ["10.1.0.10"]}, CP_JOINER: CP}
    plan = voter.join_token_plan()
    assert (plan["issuer"], plan["issue"]) == (CP_JOINER, [MASTER, WORKER])
    assert voter.issue_join_tokens([MASTER]) == {MASTER: 1}
    assert voter.join_tokens()[MASTER]["worker"] is False
    # The master is back in the cluster: it issues again, and the voter withdraws what it holds.
    cluster.reports = {MASTER: CP, CP_JOINER: CP}
    assert voter.join_token_plan() == {"issuer": MASTER, "issue": [], "withdraw": [MASTER], "serials": {MASTER: 1}}
    with pytest.raises(CommandExecutionError, match=rf"^{CP_JOINER} does not issue join tokens: {MASTER} does$"):
        voter.issue_join_tokens([WORKER])
    assert voter.issue_join_tokens([], withdraw=[MASTER]) == {MASTER: None}
    assert voter.join_tokens() == {}


def test_a_refreshed_server_certificate_republishes_the_unspent_tokens_with_its_fingerprint(microk8s, tmp_path):
    # certificates.sls refreshes server.crt when the floating IP changes; URLs published before
    # then name the old certificate, and join.py refuses them before it sends the token.
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER, WORKER])
    stale = master.join_tokens()[WORKER]["urls"][0]
    tokens_file = cluster.master.home / "credentials" / "cluster-tokens.txt"
    assert cluster.master.run("refresh-certs", "--cert", "server.crt").returncode == 0
    check = importlib.import_module("microk8s._tokens").certificate_check(
        (cluster.master.home / "certs" / "server.crt").read_text()
    )
    assert stale.rsplit("/", 1)[1] != check

    refused = cluster.worker.run("join", stale, "--worker")
    assert refused.returncode == 4
    assert master.classify_error(refused.stdout) == {"kind": "fingerprint-mismatch", "action": "renew"}
    assert master.join_token_plan()["issue"] == [CP_JOINER, WORKER]
    before = tokens_file.read_text()
    # The joiner's report, or the master's next highstate: the same tokens, today's fingerprint.
    assert master.renew_join_token(WORKER, "fingerprint-mismatch", serial=1)["serial"] == 2
    assert master.issue_join_tokens([CP_JOINER]) == {CP_JOINER: 2}
    assert tokens_file.read_text() == before  # no second live token was made
    fresh = master.join_tokens()[WORKER]["urls"][0]
    assert fresh.split("/")[:2] == stale.split("/")[:2] and fresh.rsplit("/", 1)[1] == check
    assert master.join_token_plan()["issue"] == []
    assert cluster.worker.run("join", fresh, "--worker").returncode == 0


def test_the_ca_fingerprint_tells_one_cluster_from_another(microk8s, tmp_path):
    files = {}
    microk8s.__salt__ = {
        **NO_LOCK,
        "config.get": lambda key, default=None: str(tmp_path) if key == "microk8s.snap_data" else default,
        "file.file_exists": lambda path: path in files,
        "file.read": lambda path: files[path],
    }
    certs = importlib.import_module("microk8s._certs")
    assert certs.ca_fingerprint(microk8s.__salt__) is None
    pem = "-----BEGIN CERTIFICATE-----\nAAECAw==\n-----END CERTIFICATE-----\n"
    files[f"{tmp_path}/certs/ca.crt"] = pem
    assert certs.ca_fingerprint(microk8s.__salt__) == hashlib.sha256(bytes([0, 1, 2, 3])).hexdigest()
    files[f"{tmp_path}/certs/ca.crt"] = "not a certificate"
    with pytest.raises(CommandExecutionError, match=r"certs/ca\.crt is not a PEM certificate"):
        certs.ca_fingerprint(microk8s.__salt__)


# Rolling upgrades (orch.upgrade): the plan, drain, refresh, wait, uncordon.


def joined_cluster(microk8s, tmp_path, master_address: str = LAB.master.address) -> Cluster:
    """The fake master with its voter and its worker joined, at 1.28."""
    cluster = Cluster(microk8s, tmp_path, master_address)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER, WORKER])
    tokens = master.join_tokens()
    assert cluster.cp_joiner.run("join", tokens[CP_JOINER]["urls"][0]).returncode == 0
    assert cluster.worker.run("join", tokens[WORKER]["urls"][0], "--worker").returncode == 0
    return cluster


def test_the_upgrade_plan_rolls_the_control_plane_first_one_minor_at_a_time(microk8s, tmp_path):
    master = joined_cluster(microk8s, tmp_path).as_master()
    everyone = [MASTER, CP_JOINER, WORKER]
    assert master.upgrade_plan("1.29/stable") == {
        "channel": "1.29/stable",
        "minor": 29,
        "roll": everyone,
        "current": {MASTER: "v1.28.15", CP_JOINER: "v1.28.15", WORKER: "v1.28.15"},
        "steps": [{"channel": "1.29/stable", "roll": everyone}],
    }
    assert master.upgrade_plan("1.28/candidate")["roll"] == []
    assert master.upgrade_plan("1.28/candidate")["steps"] == []
    # Several minors ahead: a step per minor, on the channel's risk.
    assert master.upgrade_plan("1.31/candidate")["steps"] == [
        {"channel": f"1.{minor}/candidate", "roll": everyone} for minor in (29, 30, 31)
    ]
    # orch.upgrade, run by hand, rolls one step: it refuses more.
    with pytest.raises(
        CommandExecutionError,
        match=rf"^{MASTER} runs v1\.28\.15: microk8s_channel 1\.35/stable skips a minor release; "
        r"upgrade one at a time \(1\.29/stable next\)$",
    ):
        master.upgrade_plan("1.35/stable", one_minor=True)
    with pytest.raises(
        CommandExecutionError, match=rf"^{MASTER} runs v1\.28\.15: microk8s_channel 1\.27/stable would downgrade it"
    ):
        master.upgrade_plan("1.27/stable")
    with pytest.raises(CommandExecutionError, match=r"microk8s channel 'latest/edge' is not 1\.<minor>/"):
        master.upgrade_plan("latest/edge")


def test_an_unset_channel_keeps_the_one_the_master_tracks_and_rolls_only_the_nodes_left_behind(
    microk8s, tmp_path, monkeypatch
):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    assert master.upgrade_plan() == {
        "channel": "1.28/stable",
        "minor": 28,
        "roll": [],
        "current": {MASTER: "v1.28.15", CP_JOINER: "v1.28.15", WORKER: "v1.28.15"},
        "steps": [],
    }
    assert master.release_check()["channel"] == "1.28/stable"
    # A roll to 1.30 that stopped after the master: unset, the others follow it one minor at a time.
    monkeypatch.setattr(importlib.import_module("microk8s._scale").time, "sleep", lambda _s: None)
    for channel in ("1.29/stable", "1.30/stable"):
        assert master.refresh(channel)["new"] == channel
        master.wait_node_ready("10.1.0.10", channel, 30, 0)
    assert master.upgrade_plan()["steps"] == [
        {"channel": "1.29/stable", "roll": [CP_JOINER, WORKER]},
        {"channel": "1.30/stable", "roll": [CP_JOINER, WORKER]},
    ]
    with pytest.raises(CommandExecutionError) as raised:
        master.release_check()
    assert str(raised.value) == (
        f"2 node(s) run 1.28 ({CP_JOINER}, {WORKER}), below the 1.30/stable this node tracks: roll them first "
        "(set microk8s_channel to 1.30/stable and deploy)"
    )
    # A node newer than the master's channel is never rolled back.
    with pytest.raises(CommandExecutionError, match=r"microk8s_channel 1\.29/stable would downgrade it"):
        master.upgrade_plan("1.29/stable")


def test_the_dual_homed_master_is_known_by_its_host_name_where_its_private_address_is_not_its_node_address(
    microk8s, tmp_path
):
    """
    kubelet registers the address of the default route: the Kubernetes master's public one, not
    the private one in the pillar. The rehearsal found the master left out of the roll.
    """
    master = joined_cluster(microk8s, tmp_path, master_address="10.0.0.11").as_master()
    assert [n["address"] for n in master.nodes() if n["name"] == "k8s-master"] == ["10.0.0.11"]
    assert master.upgrade_plan("1.29/stable")["roll"] == [MASTER, CP_JOINER, WORKER]
    assert master.drain_node("10.1.0.10", "1.29/stable", 60) == {"node": "k8s-master", "drained": True}
    assert master.uncordon_node("10.1.0.10") == "k8s-master"
    with pytest.raises(CommandExecutionError, match=r"^Kubernetes has no node at 10\.1\.0\.99$"):
        master.uncordon_node("10.1.0.99")


def test_one_node_is_drained_refreshed_waited_for_and_uncordoned(microk8s, tmp_path, monkeypatch):
    cluster = joined_cluster(microk8s, tmp_path)
    monkeypatch.setattr(importlib.import_module("microk8s._scale").time, "sleep", lambda _s: None)
    master = cluster.as_master()
    assert master.drain_node("10.1.0.101", "1.29/stable", 60) == {"node": "k8s-worker-1", "drained": True}
    assert [n["unschedulable"] for n in master.nodes() if n["address"] == "10.1.0.101"] == [True]
    # On the worker: the snap follows the channel.
    worker = microk8s
    worker.__salt__ = cluster.worker.salt_functions()
    assert worker.installed() == {"version": "v1.28.15", "tracking": "1.28/stable"}
    assert worker.refresh("1.29/stable") == {"old": "1.28/stable", "new": "1.29/stable"}
    master = cluster.as_master()
    assert master.wait_node_ready("10.1.0.101", "1.29/stable", 30, 0) == {"node": "k8s-worker-1", "version": "v1.29.0"}
    assert master.uncordon_node("10.1.0.101") == "k8s-worker-1"
    assert [n["unschedulable"] for n in master.nodes() if n["address"] == "10.1.0.101"] == [False]
    # Run again (a roll resumed after a failure): the node is passed over.
    assert master.drain_node("10.1.0.101", "1.29/stable", 60) == {"node": "k8s-worker-1", "drained": False}
    assert master.upgrade_plan("1.29/stable")["roll"] == [MASTER, CP_JOINER]


def apply_objects(node, manifest: str) -> None:
    """kubectl apply -f - on a fake node, as a user would apply a workload."""
    result = node.run_all(["microk8s", "kubectl", "apply", "-f", "-"], python_shell=False, timeout=60, stdin=manifest)
    assert result["retcode"] == 0, result["stderr"]


BARE_POD = """
apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: default}
spec: {nodeName: k8s-worker-1, containers: [{name: shell, image: busybox}]}
"""


def test_every_drain_deletes_a_pod_no_controller_manages(microk8s, tmp_path, monkeypatch):
    """
    A pod that no controller manages (kubectl run, a pod applied by hand) cannot move to another
    node: kubectl drain refuses it without --force. A roll, a reboot and a replacement delete it
    (--force, as Kubespray's and Cluster API's drains do) rather than stop.
    """
    cluster = joined_cluster(microk8s, tmp_path)
    monkeypatch.setattr(importlib.import_module("microk8s._scale").time, "sleep", lambda _s: None)
    for drain in (
        lambda master: master.drain_node("10.1.0.101", "1.29/stable", 60),
        lambda master: master.drain_for_reboot("10.1.0.101", 60),
        lambda master: master.drain_for_replacement("10.1.0.101", 60),
    ):
        apply_objects(cluster.master, BARE_POD)
        master = cluster.as_master()
        assert drain(master)["node"] == "k8s-worker-1"
        objects = json.loads((cluster.master.home / "fake" / "objects.json").read_text())
        assert "Pod/default/debug" not in objects
        master.uncordon_node("10.1.0.101")


def test_a_drain_a_disruption_budget_blocks_stops_the_roll_after_its_timeout_naming_the_pod(microk8s, tmp_path):
    """
    A PodDisruptionBudget is respected: its pod is not evicted while it allows no disruption, the
    drain gives up at its timeout, and the roll stops there naming the node and the pod.
    """
    cluster = joined_cluster(microk8s, tmp_path)
    apply_objects(
        cluster.master,
        """
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: default
  labels: {app: db}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: 1f6c, controller: true}]
spec: {nodeName: k8s-worker-1, containers: [{name: db, image: postgres}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: default}
spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}
""",
    )
    master = cluster.as_master()
    with pytest.raises(CommandExecutionError) as raised:
        master.drain_node("10.1.0.101", "1.29/stable", 1)
    assert 'error when evicting pods/"db-0" -n "default": global timeout reached: 1s' in str(raised.value)
    assert "k8s-worker-1" in str(raised.value)
    objects = json.loads((cluster.master.home / "fake" / "objects.json").read_text())
    assert "Pod/default/db-0" in objects


def test_a_node_that_is_not_ready_at_the_release_in_time_stops_the_roll_naming_it(microk8s, tmp_path):
    master = joined_cluster(microk8s, tmp_path).as_master()
    with pytest.raises(CommandExecutionError) as raised:
        master.wait_node_ready("10.1.0.101", "1.29/stable", 0, 0)
    assert str(raised.value) == (
        "the node at 10.1.0.101 is not Ready at 1.29 after 0 s; last: k8s-worker-1 Ready at v1.28.15"
    )
    with pytest.raises(CommandExecutionError, match=r"^Kubernetes has no node at 10\.1\.0\.199$"):
        master.drain_node("10.1.0.199", "1.29/stable", 60)


def test_new_nodes_join_only_a_cluster_that_runs_the_channels_release(microk8s, tmp_path):
    master = joined_cluster(microk8s, tmp_path).as_master()
    assert master.release_check("1.28/candidate")["roll"] == []
    with pytest.raises(CommandExecutionError) as raised:
        master.release_check("1.29/stable")
    assert str(raised.value) == (
        f"3 node(s) run 1.28 ({MASTER}, {CP_JOINER}, {WORKER}) and microk8s_channel is 1.29/stable: roll them first "
        "(salt-run state.orchestrate orch.upgrade on the Salt master), or keep microk8s_channel at 1.28/stable"
    )
    # Several minors ahead: the roll comes first all the same.
    with pytest.raises(CommandExecutionError, match=r"^3 node\(s\) run 1\.28 .* microk8s_channel is 1\.30/stable"):
        master.release_check("1.30/stable")


# The rolling reboot (orch.reboot): drain noting the boot id, wait for another one, uncordon.


def test_a_rebooted_node_counts_as_back_only_when_ready_with_a_new_boot_id(microk8s, tmp_path, monkeypatch):
    cluster = joined_cluster(microk8s, tmp_path)
    monkeypatch.setattr(importlib.import_module("microk8s._scale").time, "sleep", lambda _s: None)
    master = cluster.as_master()
    booted = cluster.worker.state()["boot_id"]
    assert master.drain_for_reboot("10.1.0.101", 60) == {"node": "k8s-worker-1", "boot_id": booted}
    assert calls_of(cluster.master, "kubectl drain") == [
        "kubectl drain k8s-worker-1 --ignore-daemonsets --delete-emptydir-data --force --timeout=60s"
    ]
    assert schedulable(master, "10.1.0.101") == [False]
    # Not rebooted yet: Ready with the boot id it was drained with is not back.
    with pytest.raises(CommandExecutionError) as raised:
        master.wait_node_rebooted("10.1.0.101", 0, 0)
    assert str(raised.value) == (
        "the node at 10.1.0.101 is not back from its reboot after 0 s; last: k8s-worker-1 has not rebooted, Ready"
    )
    # Booted, services still starting: not Ready.
    (cluster.worker.home / "fake").mkdir(exist_ok=True)
    (cluster.worker.home / "fake" / "faults.json").write_text(json.dumps({"restart_seconds": 60}))
    assert cluster.worker.run("fake-boot").returncode == 0
    with pytest.raises(CommandExecutionError, match=r"; last: k8s-worker-1 rebooted, not Ready$"):
        master.wait_node_rebooted("10.1.0.101", 0, 0)
    (cluster.worker.home / "fake" / "faults.json").write_text(json.dumps({"restart_seconds": 0}))
    assert cluster.worker.run("fake-boot").returncode == 0
    back = master.wait_node_rebooted("10.1.0.101", 30, 0)
    assert back == {"node": "k8s-worker-1", "boot_id": cluster.worker.state()["boot_id"]}
    assert back["boot_id"] != booted
    assert master.uncordon_node("10.1.0.101") == "k8s-worker-1"
    assert schedulable(master, "10.1.0.101") == [True]


def test_waiting_for_a_reboot_nobody_drained_for_is_an_error_not_a_wait(microk8s, tmp_path):
    master = joined_cluster(microk8s, tmp_path).as_master()
    with pytest.raises(CommandExecutionError) as raised:
        master.wait_node_rebooted("10.1.0.100", 30, 0)
    assert str(raised.value) == (
        "no boot id was noted for k8s-worker-0: drain it for the reboot first (microk8s.drain_for_reboot)"
    )
    with pytest.raises(CommandExecutionError, match=r"^Kubernetes has no node at 10\.1\.0\.199$"):
        master.drain_for_reboot("10.1.0.199", 60)


# Scale-down (remove-node.sh): vacate on the master, leave on the node, forget on the master.


def calls_of(node: FakeMicrok8s, prefix: str) -> list[str]:
    return [line for line in (node.home / "calls.log").read_text().splitlines() if line.startswith(prefix)]


def schedulable(master, address: str) -> list[bool]:
    return [not n["unschedulable"] for n in master.nodes() if n["address"] == address]


def test_a_departing_worker_is_drained_leaves_and_is_removed_and_a_second_run_finds_it_absent(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    vacated = master.vacate_node("10.1.0.101", 60)
    # How long the drain took, by the clock: 0 on an idle machine, more under load.
    assert vacated.pop("seconds") in range(0, 61)
    assert vacated == {"outcome": "drained", "node": "k8s-worker-1", "member": None, "reason": None}
    assert schedulable(master, "10.1.0.101") == [False]
    assert calls_of(cluster.master, "kubectl drain") == [
        "kubectl drain k8s-worker-1 --ignore-daemonsets --delete-emptydir-data --force --timeout=60s"
    ]
    worker = microk8s
    worker.__salt__ = cluster.worker.salt_functions()
    assert "Generating new cluster certificates." in worker.leave()
    assert not (cluster.worker.home / "var" / "lock" / "clustered.lock").exists()
    master = cluster.as_master()
    assert master.forget_node("10.1.0.101") is True
    # A worker is no dqlite member: a plain remove-node by name, no --force.
    assert calls_of(cluster.master, "remove-node") == ["remove-node k8s-worker-1"]
    assert {n["address"] for n in master.nodes()} == {"10.1.0.10", "10.1.0.100"}
    # Run again (a retried destroy): nothing is there, nothing is touched.
    assert master.vacate_node("10.1.0.101", 60)["outcome"] == "absent"
    assert master.forget_node("10.1.0.101") is False
    assert len(calls_of(cluster.master, "kubectl drain")) == 1


def three_voters(microk8s, tmp_path) -> Cluster:
    """The master, its voter and a third voter at 10.1.0.102 (k8s-worker-2): an HA cluster."""
    cluster = joined_cluster(microk8s, tmp_path)
    voter = LAB.worker(2)
    cluster.third = FakeMicrok8s(tmp_path / "third", tmp_path / "cluster", voter.address, voter.name)
    third = voter.fqdn
    pillar = {
        **PILLAR,
        "nodes": [*PILLAR["nodes"], {"id": third, "address": voter.address}],
        "control_plane": [*PILLAR["control_plane"], third],
    }
    master = cluster.as_master(pillar={"microk8s": pillar})
    master.issue_join_tokens([third])
    assert cluster.third.run("join", master.join_tokens()[third]["urls"][0]).returncode == 0
    return cluster


def test_a_voter_an_ha_cluster_cannot_lose_is_refused_with_nothing_touched(microk8s, tmp_path):
    cluster = three_voters(microk8s, tmp_path)
    master = cluster.as_master()
    assert [m["role"] for m in master.members()] == ["voter", "voter", "voter"]
    assert master.vacate_node("10.1.0.100", 60) == {
        "outcome": "refused",
        "node": "k8s-worker-0",
        "member": "voter",
        "seconds": 0,
        "reason": "refusing to remove k8s-worker-0 (a dqlite voter): the HA cluster would keep 2 of its 3 voters; "
        "keep num_kube_nodes >= 3",
    }
    assert schedulable(master, "10.1.0.100") == [True]
    assert calls_of(cluster.master, "kubectl drain") + calls_of(cluster.master, "kubectl cordon") == []
    assert len(master.members()) == 3
    # A worker of the same cluster may go: it holds no vote.
    assert master.vacate_node("10.1.0.101", 60)["outcome"] == "drained"


def test_the_second_member_of_a_two_node_cluster_may_go(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER])
    assert cluster.cp_joiner.run("join", master.join_tokens()[CP_JOINER]["urls"][0]).returncode == 0
    assert master.vacate_node("10.1.0.100", 60)["outcome"] == "drained"
    joiner = microk8s
    joiner.__salt__ = cluster.cp_joiner.salt_functions()
    joiner.leave()
    master = cluster.as_master()
    # leave.py deleted its own dqlite entry; a plain remove-node takes its Kubernetes node.
    assert [m["address"] for m in master.members()] == ["10.1.0.10:19001"]
    assert master.forget_node("10.1.0.100") is True
    assert calls_of(cluster.master, "remove-node") == ["remove-node k8s-worker-0"]
    assert [n["address"] for n in master.nodes()] == ["10.1.0.10"]


def test_a_member_that_did_not_leave_is_removed_by_force(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER])
    assert cluster.cp_joiner.run("join", master.join_tokens()[CP_JOINER]["urls"][0]).returncode == 0
    assert master.vacate_node("10.1.0.100", 60)["outcome"] == "drained"
    # No leave: the machine did not answer.
    assert master.forget_node("10.1.0.100") is True
    assert calls_of(cluster.master, "remove-node") == ["remove-node 10.1.0.100 --force"]
    assert [m["address"] for m in master.members()] == ["10.1.0.10:19001"]
    assert [n["address"] for n in master.nodes()] == ["10.1.0.10"]


def test_a_drain_that_does_not_finish_in_its_bound_is_reported_not_raised(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    fake_run_all = master.__salt__["cmd.run_all"]
    # kubectl pkg/drain/drain.go evictPods, and RunDrain's summary, for a pod that will not go.
    eviction = 'error when evicting pods/"web-0" -n "default": global timeout reached: 5s'
    stuck = {
        "retcode": 1,
        "stdout": "node/k8s-worker-1 cordoned\nevicting pod default/web-0",
        "stderr": f"There are pending nodes to be drained:\n k8s-worker-1\n{eviction}",
    }

    def run_all(cmd, **kwargs):
        return stuck if cmd[1:3] == ["kubectl", "drain"] else fake_run_all(cmd, **kwargs)

    master.__salt__["cmd.run_all"] = run_all
    vacated = master.vacate_node("10.1.0.101", 5)
    assert vacated.pop("seconds") in range(0, 6)
    assert vacated == {"outcome": "gave-up", "node": "k8s-worker-1", "member": None, "reason": eviction}


@pytest.mark.parametrize(
    ("roles", "kept"),
    [
        # Three voters: losing one leaves two, unless a standby is promoted in its place.
        (["voter", "voter", "voter"], 2),
        (["voter", "voter", "voter", "standby"], None),
        (["voter", "voter", "voter", "spare"], None),
        # Not HA: one voter and a spare, or two voters, may lose a member.
        (["voter", "voter"], None),
        (["spare", "voter"], None),
    ],
)
def test_the_voter_floor_keeps_an_ha_cluster_at_three_voters(microk8s, roles, kept):
    scale = importlib.import_module("microk8s._scale")
    members = [{"address": f"10.1.0.{10 + i}:19001", "role": role} for i, role in enumerate(roles)]
    refusal = scale.voter_floor(members, "10.1.0.10", "k8s-master")
    if kept is None:
        assert refusal is None
    else:
        assert refusal == (
            f"refusing to remove k8s-master (a dqlite voter): the HA cluster would keep {kept} of its "
            f"{roles.count('voter')} voters; keep num_kube_nodes >= 3"
        )
    # A standby or spare never holds a vote.
    assert scale.voter_floor(members, "10.1.0.99", "nobody") is None


# --- node labels and taints (_labels.py) ----------------------------------------------------------


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


# The kubelet's --cloud-provider (microk8s.kubelet), over the fake microk8s.


def kubelet_args(node: FakeMicrok8s) -> list[str]:
    return (node.home / "args" / "kubelet").read_text().splitlines()


def test_the_kubelet_flag_is_written_once_and_removed_keeping_the_other_arguments(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    microk8s.__salt__ = node.salt_functions()
    installed = kubelet_args(node)
    assert "--anonymous-auth=false" in installed
    assert microk8s.kubelet_cloud_provider() is None
    assert microk8s.set_kubelet_external_cloud_provider(True) == {"changed": True, "old": None, "new": "external"}
    assert kubelet_args(node) == [*installed, "--cloud-provider=external"]
    assert microk8s.kubelet_cloud_provider() == "external"
    assert microk8s.set_kubelet_external_cloud_provider(True) == {
        "changed": False,
        "old": "external",
        "new": "external",
    }
    assert microk8s.set_kubelet_external_cloud_provider(False) == {"changed": True, "old": "external", "new": None}
    assert kubelet_args(node) == installed
    assert microk8s.set_kubelet_external_cloud_provider(False) == {"changed": False, "old": None, "new": None}
    # Any other --cloud-provider (either spelling) is replaced, not kept beside ours.
    (node.home / "args" / "kubelet").write_text("--cloud-provider gce\n--fail-swap-on=false\n")
    assert microk8s.kubelet_cloud_provider() == "gce"
    assert microk8s.set_kubelet_external_cloud_provider(True)["old"] == "gce"
    assert kubelet_args(node) == ["--fail-swap-on=false", "--cloud-provider=external"]


def test_the_advertised_address_is_written_once_and_replaced_keeping_the_other_arguments(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    microk8s.__salt__ = node.salt_functions()
    path = node.home / "args" / "kube-apiserver"
    installed = path.read_text().splitlines()
    assert "--secure-port=16443" in installed
    assert microk8s.apiserver_advertise_address() is None
    assert microk8s.set_apiserver_advertise_address("10.1.0.10") == {"changed": True, "old": None, "new": "10.1.0.10"}
    assert path.read_text().splitlines() == [*installed, "--advertise-address=10.1.0.10"]
    assert microk8s.set_apiserver_advertise_address("10.1.0.10")["changed"] is False
    # Another address (either spelling) is replaced, not kept beside it.
    path.write_text("--advertise-address 192.0.2.10\n--secure-port=16443\n")
    assert microk8s.apiserver_advertise_address() == "192.0.2.10"
    assert microk8s.set_apiserver_advertise_address("10.1.0.10")["old"] == "192.0.2.10"
    assert path.read_text().splitlines() == ["--secure-port=16443", "--advertise-address=10.1.0.10"]


def test_without_the_arguments_file_the_kubelet_flag_is_an_error(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    (node.home / "args" / "kubelet").unlink()
    microk8s.__salt__ = node.salt_functions()
    with pytest.raises(CommandExecutionError, match="args/kubelet does not exist: microk8s writes it at install"):
        microk8s.kubelet_cloud_provider()


def test_a_kubelite_restart_makes_the_node_not_ready_until_status_waits_it_out(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    (node.home / "fake" / "faults.json").parent.mkdir(parents=True, exist_ok=True)
    (node.home / "fake" / "faults.json").write_text(json.dumps({"restart_seconds": RESTARTING}))
    microk8s.__salt__ = node.salt_functions()
    # The fake's restart, alone: status fails until the services are back.
    restarted = node.run_all(["snap", "restart", "microk8s.daemon-kubelite"], python_shell=False, timeout=60)
    assert (restarted["retcode"], restarted["stdout"]) == (0, "Restarted.\n")
    assert node.run("status", "--format", "yaml").returncode == 1
    assert microk8s.restart_kubelite(30) is True
    assert node.run("status", "--format", "yaml").returncode == 0
    calls = (node.home / "calls.log").read_text().splitlines()
    assert calls[-3:-1] == ["snap restart microk8s.daemon-kubelite", "status --wait-ready --timeout 30"]


def test_a_worker_waits_for_its_kubelite_service_after_the_restart(microk8s, monkeypatch):
    waited = []
    monkeypatch.setattr(importlib.import_module("microk8s._kubelet").time, "sleep", waited.append)
    services = iter([False, False, True])
    calls = []
    microk8s.__salt__ = {
        "cmd.run_all": lambda cmd, **kwargs: calls.append(cmd) or ok("Restarted.\n"),
        "config.get": lambda key, default=None: default,
        "file.file_exists": lambda path: path.endswith("/var/lock/clustered.lock"),
        "service.status": lambda name: next(services),
    }
    assert microk8s.restart_kubelite(60) is True
    assert calls == [["snap", "restart", "microk8s.daemon-kubelite"]]
    assert waited == [2, 2]


def test_a_failed_restart_or_a_worker_that_does_not_come_back_is_an_error(microk8s, monkeypatch):
    monkeypatch.setattr(importlib.import_module("microk8s._kubelet").time, "sleep", lambda seconds: None)
    # snapd's answer to a caller without root (client: "access denied (try with sudo)").
    failed = {"retcode": 1, "stdout": "", "stderr": "error: access denied (try with sudo)"}
    microk8s.__salt__ = {"cmd.run_all": lambda cmd, **kwargs: failed, **NO_LOCK}
    message = "snap restart microk8s.daemon-kubelite failed: error: access denied (try with sudo)"
    with pytest.raises(CommandExecutionError, match=re.escape(message)):
        microk8s.restart_kubelite(60)
    microk8s.__salt__ = {
        "cmd.run_all": lambda cmd, **kwargs: ok("Restarted.\n"),
        "config.get": lambda key, default=None: default,
        "file.file_exists": lambda path: True,
        "service.status": lambda name: False,
    }
    message = "snap.microk8s.daemon-kubelite did not run again within 0 seconds"
    with pytest.raises(CommandExecutionError, match=re.escape(message)):
        microk8s.restart_kubelite(0)


def test_the_kubelet_state_through_the_real_loader_predicts_changes_restarts_once_and_removes(tmp_path):
    """
    state.single microk8s.kubelet_external_cloud_provider against the fake microk8s, as
    microk8s/kubelet.sls runs it: test mode predicts, a change restarts kubelite and waits for
    the node, a second run changes nothing, false removes the flag (and restarts again).
    """
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    (node.home / "fake").mkdir(parents=True, exist_ok=True)
    (node.home / "fake" / "faults.json").write_text(json.dumps({"restart_seconds": 1}))
    grains = {"microk8s.snap_data": str(node.home)}
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", grains=grains, env=node.env).call
    call("saltutil.sync_all")
    installed = kubelet_args(node)

    def kubelet(external: bool, *extra: str) -> dict:
        state = "microk8s.kubelet_external_cloud_provider"
        return next(iter(call("state.single", state, "kubelet", f"external={json.dumps(external)}", *extra).values()))

    def restarts() -> int:
        return (node.home / "calls.log").read_text().splitlines().count("snap restart microk8s.daemon-kubelite")

    predicted = kubelet(True, "test=True")
    assert (predicted["result"], predicted["changes"]) == (None, {"cloud_provider": {"old": None, "new": "external"}})
    assert (kubelet_args(node), restarts()) == (installed, 0)
    applied = kubelet(True)
    assert (applied["result"], applied["changes"]) == (True, predicted["changes"])
    assert applied["comment"] == "the kubelet runs with --cloud-provider=external (kubelite restarted)"
    assert (kubelet_args(node), restarts()) == ([*installed, "--cloud-provider=external"], 1)
    # The state returned once the node was ready again.
    assert node.run("status", "--format", "yaml").returncode == 0
    again = kubelet(True)
    assert (again["result"], again["changes"], restarts()) == (True, {}, 1)
    removed = kubelet(False)
    assert removed["changes"] == {"cloud_provider": {"old": "external", "new": None}}
    assert (kubelet_args(node), restarts()) == (installed, 2)
    assert kubelet(False)["changes"] == {}
