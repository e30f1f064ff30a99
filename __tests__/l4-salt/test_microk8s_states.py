"""Unit tests of salt/_states/microk8s.py: __salt__ and __opts__ patched, whole return dicts."""

from __future__ import annotations

import pytest
from harness.layout import LAB
from harness.salt_minion import ROOT, load_module
from salt.exceptions import CommandExecutionError

STATE_PATH = ROOT / "salt" / "_states" / "microk8s.py"
MASTER = LAB.master.fqdn
ME = LAB.worker(1).fqdn


@pytest.fixture
def states():
    module = load_module("microk8s_states", STATE_PATH)
    module.__opts__ = {"test": False}
    return module


class Node:
    """A microk8s node as the execution module reports it, recording what the states do."""

    def __init__(self, running=True, addons=None, fail=None, worker=False):
        self.running = running
        self.worker = worker
        self.addons = dict(addons or {})
        self.fail = fail
        self.actions = []

    def functions(self):
        def addon_status(name):
            if name not in self.addons:
                raise CommandExecutionError(f"microk8s has no addon named {name!r}")
            return self.addons[name]

        def enable(name, args=None):
            self.actions.append(("enable", name, args))
            if self.fail:
                raise CommandExecutionError(self.fail)
            self.addons[name] = "enabled"

        def disable(name):
            self.actions.append(("disable", name))
            self.addons[name] = "disabled"

        def start():
            self.actions.append(("start",))
            self.running = True

        return {
            "microk8s.status": lambda: {},
            "microk8s.is_running": lambda: self.running,
            "microk8s.is_worker": lambda: self.worker,
            "microk8s.start": start,
            "microk8s.wait_ready": lambda timeout: self.actions.append(("wait_ready", timeout)) or True,
            "microk8s.addon_status": addon_status,
            "microk8s.enable": enable,
            "microk8s.disable": disable,
        }


def use(states, node, test=False):
    states.__salt__ = node.functions()
    states.__opts__ = {"test": test}


def test_running_when_already_running_changes_nothing(states):
    node = Node(running=True)
    for test in (False, True):
        use(states, node, test)
        assert states.running() == {
            "name": "microk8s",
            "result": True,
            "changes": {},
            "comment": "microk8s is already running",
        }
    assert node.actions == []


def test_running_predicts_in_test_mode_and_starts_otherwise(states):
    node = Node(running=False)
    use(states, node, test=True)
    assert states.running() == {
        "name": "microk8s",
        "result": None,
        "changes": {"running": {"old": False, "new": True}},
        "comment": "microk8s would be started",
    }
    assert node.actions == []
    use(states, node)
    assert states.running() == {
        "name": "microk8s",
        "result": True,
        "changes": {"running": {"old": False, "new": True}},
        "comment": "microk8s started",
    }
    assert node.actions == [("start",), ("wait_ready", 300)]


def test_running_on_a_worker_does_not_wait_for_a_status_it_cannot_have(states):
    node = Node(running=False, worker=True)
    use(states, node)
    assert states.running()["comment"] == "microk8s started"
    assert node.actions == [("start",)]


def test_addon_enabled_is_idempotent(states):
    node = Node(addons={"dns": "disabled"})
    use(states, node)
    first = states.addon_enabled("dns", ["1.1.1.1"])
    assert first == {
        "name": "dns",
        "result": True,
        "changes": {"dns": {"old": "disabled", "new": "enabled"}},
        "comment": "addon dns enabled",
    }
    second = states.addon_enabled("dns", ["1.1.1.1"])
    assert second == {"name": "dns", "result": True, "changes": {}, "comment": "addon dns is already enabled"}
    assert node.actions == [("enable", "dns", ["1.1.1.1"])]


def test_addon_enabled_in_test_mode_only_predicts(states):
    node = Node(addons={"dns": "disabled"})
    use(states, node, test=True)
    assert states.addon_enabled("dns") == {
        "name": "dns",
        "result": None,
        "changes": {"dns": {"old": "disabled", "new": "enabled"}},
        "comment": "addon dns would be enabled",
    }
    assert node.actions == []


def test_addon_disabled_disables_once(states):
    node = Node(addons={"registry": "enabled"})
    use(states, node)
    assert states.addon_disabled("registry")["changes"] == {"registry": {"old": "enabled", "new": "disabled"}}
    assert states.addon_disabled("registry") == {
        "name": "registry",
        "result": True,
        "changes": {},
        "comment": "addon registry is already disabled",
    }


def test_addon_failures_are_reported_not_raised(states):
    use(states, Node(addons={"dns": "disabled"}, fail="Addon dns failed to enable"))
    assert states.addon_enabled("dns") == {
        "name": "dns",
        "result": False,
        "changes": {},
        "comment": "addon dns could not be enabled: Addon dns failed to enable",
    }
    use(states, Node(addons={}))
    assert states.addon_enabled("nope") == {
        "name": "nope",
        "result": False,
        "changes": {},
        "comment": "microk8s has no addon named 'nope'",
    }


def test_virtual_needs_the_execution_module(states):
    states.__salt__ = {}
    assert states.__virtual__() == (
        False,
        "the microk8s state module needs the microk8s execution module (and its binary)",
    )
    states.__salt__ = {"microk8s.status": lambda: {}}
    assert states.__virtual__() == "microk8s"


# extra_sans

API_ADDRESSES = ["203.0.113.10", "203.0.113.20", "10.1.0.5"]
NAME = "microk8s-certificates-microk8s-extra-sans"


def san_node(current, fail=None):
    calls = []

    def set_sans(addresses):
        calls.append(addresses)
        if fail:
            raise CommandExecutionError(fail)
        return {"changed": True, "sans": [f"IP.{99 - i} = {a}" for i, a in enumerate(addresses)]}

    return calls, {"microk8s.extra_sans": lambda: current, "microk8s.config_set_extra_sans": set_sans}


def test_extra_sans_already_set_change_nothing_in_test_mode_too(states):
    calls, functions = san_node(list(API_ADDRESSES))
    for test in (False, True):
        states.__salt__, states.__opts__ = functions, {"test": test}
        assert states.extra_sans(NAME, API_ADDRESSES) == {
            "name": NAME,
            "result": True,
            "changes": {},
            "comment": "the extra SANs are already 203.0.113.10, 203.0.113.20, 10.1.0.5",
        }
    assert calls == []


@pytest.mark.parametrize(
    "current",
    [
        [],  # a fresh node
        ["203.0.113.10"],  # the single floating IP of an earlier release, or before the load balancer
        ["203.0.113.10", "203.0.113.9", "10.1.0.5"],  # a load balancer with a new floating IP
        ["203.0.113.10", "203.0.113.20", "10.1.0.5", "10.1.0.6"],  # one too many
    ],
)
def test_extra_sans_are_predicted_then_set(states, current):
    calls, functions = san_node(current)
    changes = {"extra_sans": {"old": current, "new": API_ADDRESSES}}
    states.__salt__, states.__opts__ = functions, {"test": True}
    assert states.extra_sans(NAME, API_ADDRESSES) == {
        "name": NAME,
        "result": None,
        "changes": changes,
        "comment": "the extra SANs would become 203.0.113.10, 203.0.113.20, 10.1.0.5",
    }
    assert calls == []
    states.__opts__ = {"test": False}
    assert states.extra_sans(NAME, API_ADDRESSES) == {
        "name": NAME,
        "result": True,
        "changes": changes,
        "comment": "the extra SANs are 203.0.113.10, 203.0.113.20, 10.1.0.5",
    }
    assert calls == [API_ADDRESSES]


NO_MARKER = "csr.conf.template has no #MOREIPS marker to add a SAN at"


def test_extra_sans_failures_are_reported(states):
    _, functions = san_node([], fail=NO_MARKER)
    states.__salt__, states.__opts__ = functions, {"test": False}
    assert states.extra_sans(NAME, ["203.0.113.10"]) == {
        "name": NAME,
        "result": False,
        "changes": {},
        "comment": f"the extra SANs could not be set to 203.0.113.10: {NO_MARKER}",
    }


def test_extra_sans_refused_by_the_module_are_reported(states):
    refused = "None is not an IPv4 address: an extra SAN must be one"
    _, functions = san_node([], fail=refused)
    states.__salt__, states.__opts__ = functions, {"test": False}
    assert states.extra_sans(NAME, ["203.0.113.10", None]) == {
        "name": NAME,
        "result": False,
        "changes": {},
        "comment": f"the extra SANs could not be set to 203.0.113.10, None: {refused}",
    }


def test_extra_sans_unreadable_template_is_reported(states):
    def unreadable():
        raise CommandExecutionError("No such file or directory")

    states.__salt__ = {"microk8s.extra_sans": unreadable}
    for test in (False, True):
        states.__opts__ = {"test": test}
        assert states.extra_sans(NAME, ["203.0.113.10"]) == {
            "name": NAME,
            "result": False,
            "changes": {},
            "comment": "the certificate template cannot be read: No such file or directory",
        }


def test_extra_sans_must_be_a_list(states):
    calls, functions = san_node([])
    for test in (False, True):
        states.__salt__, states.__opts__ = functions, {"test": test}
        assert states.extra_sans(NAME, "203.0.113.10") == {
            "name": NAME,
            "result": False,
            "changes": {},
            "comment": "addresses must be a list of IPv4 addresses, not '203.0.113.10'",
        }
    assert calls == []


# join_tokens_published, on the master


class Master:
    """The master's execution functions as join_tokens_published uses them."""

    def __init__(self, plan, published=None, current=None, minion_id=MASTER, fail=None, fail_plan=None, issuer=MASTER):
        self.plan = plan
        self.issuer = issuer
        self.fail_plan = fail_plan
        self.planned_with = []
        self.published = published if published is not None else {}
        self.current = current if current is not None else {}
        self.minion_id = minion_id
        self.fail = fail
        self.actions = []

    def plan_for(self, ttl):
        self.planned_with.append(ttl)
        if self.fail_plan:
            raise CommandExecutionError(self.fail_plan)
        return {"issuer": self.issuer, **self.plan}

    def functions(self):
        def issue(joiners, withdraw, ttl):
            self.actions.append(("issue", joiners, withdraw, ttl))
            if self.fail:
                raise CommandExecutionError(self.fail)
            return {**{j: 7 for j in joiners}, **{j: None for j in withdraw}}

        return {
            "microk8s.join_token_plan": self.plan_for,
            "microk8s.join_tokens": lambda: self.current,
            "microk8s.issue_join_tokens": issue,
            "mine.get": lambda target, function: {target: self.published} if function == "microk8s.join_tokens" else {},
            "mine.update": lambda: self.actions.append(("mine.update",)),
        }


def test_a_token_ttl_that_would_renew_on_every_run_fails_the_state_before_issuing(states):
    message = (
        "pillar microk8s:join:token_ttl must be -1 (single-use) or at least 300 seconds "
        "(a token expiring within 120 s is renewed on every run), got 60"
    )
    master = Master({"issue": [ME], "withdraw": [], "serials": {}}, fail_plan=message)
    on_master(states, master)
    assert states.join_tokens_published("tokens", ttl=60) == {
        "name": "tokens",
        "result": False,
        "changes": {},
        "comment": f"join tokens cannot be checked: {message}",
    }
    assert (master.planned_with, master.actions) == ([60], [])


def on_master(states, master, test=False):
    states.__salt__ = master.functions()
    states.__opts__ = {"test": test, "id": master.minion_id}


PUBLISHED = {ME: {"urls": ["10.1.0.10:25000/t/c"], "serial": 6, "worker": True, "expires": None}}


def test_tokens_already_issued_and_published_change_nothing(states):
    master = Master({"issue": [], "withdraw": [], "serials": {ME: 6}}, published=PUBLISHED, current=PUBLISHED)
    for test in (False, True):
        on_master(states, master, test)
        assert states.join_tokens_published("tokens") == {
            "name": "tokens",
            "result": True,
            "changes": {},
            "comment": "every pending joiner holds a live, published join token",
        }
    assert master.actions == []


def test_tokens_are_predicted_in_test_mode_then_issued_withdrawn_and_published(states):
    plan = {"issue": [ME], "withdraw": ["k8s-worker-0.lab.example"], "serials": {ME: 6, "k8s-worker-0.lab.example": 2}}
    master = Master(plan)
    on_master(states, master, test=True)
    assert states.join_tokens_published("tokens", ttl=600) == {
        "name": "tokens",
        "result": None,
        "changes": {
            "tokens": {
                "old": {ME: 6, "k8s-worker-0.lab.example": 2},
                "new": {ME: "new token", "k8s-worker-0.lab.example": None},
            }
        },
        "comment": "join tokens would be issued and published",
    }
    assert master.actions == []
    on_master(states, master)
    assert states.join_tokens_published("tokens", ttl=600) == {
        "name": "tokens",
        "result": True,
        "changes": {
            "tokens": {
                "old": {ME: 6, "k8s-worker-0.lab.example": 2},
                "new": {ME: 7, "k8s-worker-0.lab.example": None},
            }
        },
        "comment": "join tokens issued and published",
    }
    assert master.actions == [("issue", [ME], ["k8s-worker-0.lab.example"], 600), ("mine.update",)]


def test_tokens_missing_from_the_mine_are_published_again(states):
    master = Master({"issue": [], "withdraw": [], "serials": {ME: 6}}, published={}, current=PUBLISHED)
    on_master(states, master)
    assert states.join_tokens_published("tokens") == {
        "name": "tokens",
        "result": True,
        "changes": {"mine": {"old": "stale", "new": "published"}},
        "comment": "join tokens issued and published",
    }
    assert master.actions == [("mine.update",)]


def test_a_node_that_does_not_issue_holds_no_tokens_and_withdraws_its_own(states):
    # The plan on a node that is not the issuer: nothing to issue, every token it holds withdrawn.
    voter = "k8s-worker-0.lab.example"
    on_master(states, Master({"issue": [], "withdraw": [], "serials": {}}, minion_id=voter))
    assert states.join_tokens_published("tokens") == {
        "name": "tokens",
        "result": True,
        "changes": {},
        "comment": f"{MASTER} issues the join tokens; this node holds none",
    }
    # It issued for the master while the master was rebuilt; the master issues again now.
    held = Master({"issue": [], "withdraw": [MASTER], "serials": {MASTER: 1}}, minion_id=voter)
    on_master(states, held)
    assert states.join_tokens_published("tokens") == {
        "name": "tokens",
        "result": True,
        "changes": {"tokens": {"old": {MASTER: 1}, "new": {MASTER: None}}},
        "comment": "join tokens issued and published",
    }
    assert held.actions == [("issue", [], [MASTER], -1), ("mine.update",)]


def test_failures_to_issue_are_reported(states):
    master = Master({"issue": [ME], "withdraw": [], "serials": {}}, fail="microk8s add-node failed: not running")
    on_master(states, master)
    assert states.join_tokens_published("tokens") == {
        "name": "tokens",
        "result": False,
        "changes": {},
        "comment": "join tokens could not be issued: microk8s add-node failed: not running",
    }


# cluster_joined, on a joiner: check, predict, act (microk8s.join_cluster, whose retries
# test_microk8s_join.py tests), verify.


class Joiner:
    """
    A joining node as the state sees it: its membership, and ``microk8s.join_cluster``, which
    joins it (``failure`` None) or gives up with that message (also how it reports a membership
    that did not settle after the join: the module's settled_membership, tested there).
    """

    def __init__(self, role="standalone", members=(), failure=None, issuer=MASTER):
        self.issuer = issuer
        self.role = role
        self.members = list(members)
        self.failure = failure
        self.actions = []

    def functions(self):
        def membership():
            return {"role": self.role, "members": self.members}

        def join_cluster(master, master_address, worker, attempts, interval, max_interval):
            self.actions.append(("join_cluster", master, master_address, worker, attempts, interval, max_interval))
            if self.failure:
                raise CommandExecutionError(self.failure)
            self.role = "worker" if worker else "control-plane"
            self.members = [] if worker else ["10.1.0.10", "10.1.0.101"]
            return {"attempts": 1, "serial": 1, "membership": {"role": self.role, "members": self.members}}

        return {
            "microk8s.membership": membership,
            "microk8s.join_cluster": join_cluster,
            "microk8s.issuer": lambda: self.issuer,
            "mine.update": lambda: self.actions.append(("mine.update",)),
        }


def join_as(states, joiner, test=False, **kwargs):
    states.__salt__ = joiner.functions()
    states.__opts__ = {"test": test, "id": ME}
    return states.cluster_joined("join", MASTER, **{"master_address": LAB.master.address, "worker": True, **kwargs})


JOINED = {
    "name": "join",
    "result": True,
    "changes": {"cluster": {"old": "standalone", "new": f"worker of {MASTER}"}},
    "comment": f"joined {MASTER} as worker",
}


def test_an_already_joined_node_changes_nothing_in_test_mode_too(states):
    for test in (False, True):
        worker = Joiner(role="worker")
        assert join_as(states, worker, test) == {
            "name": "join",
            "result": True,
            "changes": {},
            "comment": f"already joined {MASTER} as worker",
        }
        voter = Joiner(role="control-plane", members=["10.1.0.10", "10.1.0.100"])
        assert join_as(states, voter, test, worker=False)["comment"] == f"already joined {MASTER} as control-plane"
        assert worker.actions == voter.actions == []


def test_test_mode_predicts_the_join(states):
    joiner = Joiner()
    assert join_as(states, joiner, test=True) == {
        "name": "join",
        "result": None,
        "changes": {"cluster": {"old": "standalone", "new": f"worker of {MASTER}"}},
        "comment": f"would join {MASTER} as worker",
    }
    assert joiner.actions == []


def test_a_node_of_another_cluster_is_not_pulled_out_of_it(states):
    joiner = Joiner(role="control-plane", members=["10.9.0.1", "10.9.0.2"])
    assert join_as(states, joiner) == {
        "name": "join",
        "result": False,
        "changes": {},
        "comment": f"this node is already a control-plane of another cluster (10.9.0.1, 10.9.0.2); "
        f"run microk8s leave on it before it can join {MASTER} as worker",
    }
    assert joiner.actions == []


def test_a_join_reports_old_and_new_and_passes_the_retry_bounds_on(states):
    joiner = Joiner()
    assert join_as(states, joiner, attempts=4, interval=2, max_interval=30) == JOINED
    # The new membership goes to the mine, where the voters' memberships name the issuer.
    assert joiner.actions == [("join_cluster", MASTER, "10.1.0.10", True, 4, 2, 30), ("mine.update",)]
    voter = Joiner()
    assert join_as(states, voter, worker=False)["changes"] == {
        "cluster": {"old": "standalone", "new": f"control-plane of {MASTER}"}
    }
    assert voter.actions == [("join_cluster", MASTER, "10.1.0.10", False, 8, 5, 60), ("mine.update",)]


def test_a_join_that_gives_up_fails_with_its_reason(states):
    reason = f"not joined to {MASTER} after 8 attempts; last: {MASTER} has not renewed spent join token #1"
    assert join_as(states, Joiner(failure=reason)) == {
        "name": "join",
        "result": False,
        "changes": {},
        "comment": reason,
    }


def test_an_unknown_membership_fails_without_joining(states):
    # microk8s#2190: status listed no dqlite members; calling the node standalone would make it
    # join again and ask the master to remove its "stale" member: a healthy voter.
    joiner = Joiner()

    def membership():
        raise CommandExecutionError(
            "microk8s status listed no dqlite members 3 times while high availability is enabled"
        )

    states.__salt__ = {**joiner.functions(), "microk8s.membership": membership}
    states.__opts__ = {"test": False, "id": ME}
    assert states.cluster_joined("join", MASTER, master_address="10.1.0.10", worker=False) == {
        "name": "join",
        "result": False,
        "changes": {},
        "comment": "cannot tell whether this node is in a cluster: "
        "microk8s status listed no dqlite members 3 times while high availability is enabled",
    }
    assert joiner.actions == []


ROLES = {
    "master": MASTER,
    "control_plane": [MASTER, LAB.worker(0).fqdn],
    "workers": [ME],
    "joiners": {LAB.worker(0).fqdn: False, ME: True},
    "addresses": {m.fqdn: m.address for m in LAB.kube_nodes(3)},
}


def test_the_issuer_role_and_address_come_from_the_mine_and_the_pillar_when_not_given(states):
    joiner = Joiner()
    states.__salt__ = {**joiner.functions(), "microk8s.node_roles": lambda: ROLES}
    states.__opts__ = {"test": False, "id": ME}
    assert states.cluster_joined("join") == JOINED
    assert joiner.actions == [("join_cluster", MASTER, "10.1.0.10", True, 8, 5, 60), ("mine.update",)]


def test_a_rebuilt_master_joins_through_the_voter_that_issues(states):
    voter = "k8s-worker-0.lab.example"
    joiner = Joiner(issuer=voter)
    states.__salt__ = {**joiner.functions(), "microk8s.node_roles": lambda: ROLES}
    states.__opts__ = {"test": False, "id": MASTER}
    assert states.cluster_joined("join") == {
        "name": "join",
        "result": True,
        "changes": {"cluster": {"old": "standalone", "new": f"control-plane of {voter}"}},
        "comment": f"joined {voter} as control-plane",
    }
    assert joiner.actions == [("join_cluster", voter, "10.1.0.100", False, 8, 5, 60), ("mine.update",)]


def test_the_issuer_has_nothing_to_join(states):
    joiner = Joiner()
    states.__salt__ = {**joiner.functions(), "microk8s.node_roles": lambda: ROLES}
    for test in (False, True):
        states.__opts__ = {"test": test, "id": MASTER}
        assert states.cluster_joined("join") == {
            "name": "join",
            "result": True,
            "changes": {},
            "comment": "this node issues the join tokens: it has no cluster to join",
        }
    assert joiner.actions == []


@pytest.mark.parametrize(
    ("minion_id", "master", "comment"),
    [
        ("stranger.lab.example", MASTER, "stranger.lab.example is not a node in pillar microk8s:nodes"),
        (ME, "other-master.lab.example", "other-master.lab.example is not a voter in pillar microk8s:control_plane"),
    ],
)
def test_a_node_the_pillar_does_not_expect_does_not_join(states, minion_id, master, comment):
    joiner = Joiner()
    states.__salt__ = {**joiner.functions(), "microk8s.node_roles": lambda: ROLES}
    states.__opts__ = {"test": False, "id": minion_id}
    assert states.cluster_joined("join", master) == {
        "name": "join",
        "result": False,
        "changes": {},
        "comment": f"this node's role is unknown: {comment}",
    }
    assert joiner.actions == []


# channel_tracked, run by orch.upgrade on one drained node at a time.


class Snap:
    def __init__(self, tracking=None, fail=None):
        self.tracking = tracking
        self.fail = fail
        self.refreshed = []

    def functions(self):
        def refresh(channel):
            self.refreshed.append(channel)
            if self.fail:
                raise CommandExecutionError(self.fail)
            return {"old": self.tracking, "new": channel}

        installed = None if self.tracking is None else {"version": "v1.28.15", "tracking": self.tracking}
        return {"microk8s.installed": lambda: installed, "microk8s.refresh": refresh}


def track(states, snap, test=False):
    states.__salt__ = snap.functions()
    states.__opts__ = {"test": test}
    return states.channel_tracked("1.29/stable")


def test_a_node_on_the_channel_or_without_the_snap_changes_nothing(states):
    for test in (False, True):
        assert track(states, Snap("1.29/stable"), test) == {
            "name": "1.29/stable",
            "result": True,
            "changes": {},
            "comment": "microk8s already tracks 1.29/stable",
        }
        assert (
            track(states, Snap(None), test)["comment"]
            == "microk8s is not installed; microk8s.install installs 1.29/stable"
        )


def test_a_node_on_another_channel_is_predicted_then_refreshed_or_the_failure_reported(states):
    changes = {"channel": {"old": "1.28/stable", "new": "1.29/stable"}}
    snap = Snap("1.28/stable")
    assert track(states, snap, test=True) == {
        "name": "1.29/stable",
        "result": None,
        "changes": changes,
        "comment": "microk8s would be refreshed to 1.29/stable",
    }
    assert snap.refreshed == []
    assert track(states, snap) == {
        "name": "1.29/stable",
        "result": True,
        "changes": changes,
        "comment": "microk8s refreshed to 1.29/stable",
    }
    failing = Snap("1.28/stable", fail="snap refresh microk8s --channel=1.29/stable failed: no network")
    assert track(states, failing) == {
        "name": "1.29/stable",
        "result": False,
        "changes": {},
        "comment": "snap refresh microk8s --channel=1.29/stable failed: no network",
    }


# --- nodes_labelled ---------------------------------------------------------------------------

WORKER = LAB.worker(1).fqdn
LABELLED = "microk8s:nodes"


class Labels:
    """microk8s.label_plan and label_node over nodes whose wanted labels are either there or not."""

    def __init__(self, wanted: dict, labelled: set, fail: dict | None = None):
        self.wanted = wanted
        self.labelled = set(labelled)
        self.fail = fail or {}
        self.actions = []

    def plan(self, address, labels, taints):
        done = address in self.labelled
        return {
            "changed": not done,
            "old": {"labels": labels if done else {}, "taints": taints if done else []},
            "new": {"labels": labels, "taints": taints},
        }

    def functions(self):
        def label_node(address, labels, taints):
            self.actions.append(("label_node", address, labels, taints))
            if address in self.fail:
                raise CommandExecutionError(self.fail[address])
            result = {"node": address, **self.plan(address, labels, taints)}
            self.labelled.add(address)
            return result

        return {
            "microk8s.label_plan": lambda: {
                node: {"address": want["address"], **self.plan(want["address"], want["labels"], want["taints"])}
                for node, want in self.wanted.items()
            },
            "microk8s.label_node": label_node,
        }


WANTED = {
    MASTER: {"address": LAB.master.address, "labels": {"kube-on-os/pool": "default"}, "taints": []},
    WORKER: {"address": LAB.worker(1).address, "labels": {"kube-on-os/pool": "gpu"}, "taints": ["gpu=true:NoSchedule"]},
}


def test_nodes_labelled_when_every_node_has_its_labels_changes_nothing(states):
    labels = Labels(WANTED, {"10.1.0.10", "10.1.0.101"})
    for test in (False, True):
        states.__salt__ = labels.functions()
        states.__opts__ = {"test": test}
        assert states.nodes_labelled(LABELLED) == {
            "name": LABELLED,
            "result": True,
            "changes": {},
            "comment": "all 2 nodes have their labels and taints",
        }
    assert labels.actions == []


def test_nodes_labelled_in_test_mode_predicts_the_changes_and_touches_nothing(states):
    labels = Labels(WANTED, {"10.1.0.10"})
    states.__salt__ = labels.functions()
    states.__opts__ = {"test": True}
    assert states.nodes_labelled(LABELLED) == {
        "name": LABELLED,
        "result": None,
        "changes": {
            WORKER: {
                "old": {"labels": {}, "taints": []},
                "new": {"labels": {"kube-on-os/pool": "gpu"}, "taints": ["gpu=true:NoSchedule"]},
            }
        },
        "comment": f"labels and taints would change on {WORKER}",
    }
    assert labels.actions == []


def test_nodes_labelled_labels_the_nodes_that_need_it_and_reports_old_and_new(states):
    labels = Labels(WANTED, set())
    states.__salt__ = labels.functions()
    assert states.nodes_labelled(LABELLED) == {
        "name": LABELLED,
        "result": True,
        "changes": {
            MASTER: {
                "old": {"labels": {}, "taints": []},
                "new": {"labels": {"kube-on-os/pool": "default"}, "taints": []},
            },
            WORKER: {
                "old": {"labels": {}, "taints": []},
                "new": {"labels": {"kube-on-os/pool": "gpu"}, "taints": ["gpu=true:NoSchedule"]},
            },
        },
        "comment": f"labels and taints applied on {MASTER}, {WORKER}",
    }
    assert labels.actions == [
        ("label_node", "10.1.0.10", {"kube-on-os/pool": "default"}, []),
        ("label_node", "10.1.0.101", {"kube-on-os/pool": "gpu"}, ["gpu=true:NoSchedule"]),
    ]


def test_nodes_labelled_reports_a_node_that_failed_and_still_labels_the_others(states):
    failure = (
        "microk8s kubectl taint node k8s-master gpu=true:NoSchedule --overwrite failed (exit 1): Error from server"
    )
    labels = Labels(WANTED, set(), fail={"10.1.0.10": failure})
    states.__salt__ = labels.functions()
    assert states.nodes_labelled(LABELLED) == {
        "name": LABELLED,
        "result": False,
        "changes": {
            WORKER: {
                "old": {"labels": {}, "taints": []},
                "new": {"labels": {"kube-on-os/pool": "gpu"}, "taints": ["gpu=true:NoSchedule"]},
            }
        },
        "comment": f"labels and taints could not be applied on {MASTER}: {failure}",
    }


def test_nodes_labelled_fails_on_a_bad_pillar_before_touching_any_node(states):
    labels = Labels(WANTED, set())
    functions = labels.functions()

    def bad_pillar():
        raise CommandExecutionError(f"pillar microk8s:nodes entry {WORKER}: label key '-pool' name part must be")

    states.__salt__ = {**functions, "microk8s.label_plan": bad_pillar}
    assert states.nodes_labelled(LABELLED) == {
        "name": LABELLED,
        "result": False,
        "changes": {},
        "comment": (
            f"node labels and taints cannot be checked: pillar microk8s:nodes entry {WORKER}: "
            "label key '-pool' name part must be"
        ),
    }
    assert labels.actions == []


# The OpenStack cloud integration (microk8s.cloud_provider).

CLOUD_WORKER = LAB.worker(0).fqdn
SECRET_NAME = "kube-system/cloud-config"
OLD_SHA, NEW_SHA = "a" * 64, "b" * 64
SOURCES = ["salt://microk8s/files/cloud-provider/csi-cinder-driver.yaml"]


class Cloud:
    """The execution module's cloud functions over a cluster of dicts, recording what the states do."""

    def __init__(self, provider_ids=None, secret=None, objects=None, defaults=("microk8s-hostpath",), fail=None):
        self.provider_ids = dict(provider_ids or {MASTER: None, CLOUD_WORKER: None})
        self.secret = secret
        self.objects = set(objects or ())
        self.defaults = list(defaults)
        self.fail = fail or {}
        self.actions = []

    def _failing(self, name):
        if name in self.fail:
            raise CommandExecutionError(self.fail[name])

    def functions(self):
        def provider_id_plan():
            self._failing("provider_id_plan")
            return {
                node: {
                    "node": node.split(".")[0],
                    "old": old,
                    "new": f"openstack:///{node}",
                    "changed": old is None,
                    "stale": old is not None and old != f"openstack:///{node}",
                }
                for node, old in self.provider_ids.items()
            }

        def set_provider_id(node, provider_id):
            self.actions.append(("set_provider_id", node, provider_id))
            self._failing(node)
            self.provider_ids[f"{node}.lab.example"] = provider_id
            return f"node/{node} patched"

        def cloud_config_plan(options=None):
            self._failing("cloud_config_plan")
            return {"secret": SECRET_NAME, "old": self.secret, "new": NEW_SHA, "changed": self.secret != NEW_SHA}

        def cloud_config_apply(options=None):
            self.actions.append(("cloud_config_apply", options))
            self._failing("cloud_config_apply")
            plan = cloud_config_plan()
            self.secret = NEW_SHA
            return {**plan, "operation": "configured" if plan["old"] else "created"}

        def manifests_apply(sources, dry_run=False):
            self.actions.append(("manifests_apply", sources, dry_run))
            applied = {"csidriver.storage.k8s.io/cinder.csi.openstack.org": "unchanged" if self.objects else "created"}
            if not dry_run:
                self.objects.add("csidriver")
            return applied

        def storage_class_plan(name):
            operation = "unchanged" if name in self.objects else "created"
            undefault = [c for c in self.defaults if c != name]
            return {
                "apply": {f"storageclass.storage.k8s.io/{name}": operation},
                "undefault": undefault,
                "changed": operation != "unchanged" or bool(undefault),
            }

        def default_storage_class(name):
            self.actions.append(("default_storage_class", name))
            plan = storage_class_plan(name)
            self.objects.add(name)
            self.defaults = [name]
            return plan

        return {
            "microk8s.status": lambda: {},
            "microk8s.provider_id_plan": provider_id_plan,
            "microk8s.set_provider_id": set_provider_id,
            "microk8s.cloud_config_plan": cloud_config_plan,
            "microk8s.cloud_config_apply": cloud_config_apply,
            "microk8s.manifests_apply": manifests_apply,
            "microk8s.storage_class_plan": storage_class_plan,
            "microk8s.default_storage_class": default_storage_class,
        }


def run(states, cloud: Cloud, function: str, *args, test: bool = False, **kwargs) -> dict:
    states.__salt__ = cloud.functions()
    states.__opts__ = {"test": test}
    return getattr(states, function)(*args, **kwargs)


def test_provider_ids_set_predicts_in_test_mode_then_sets_them_then_changes_nothing(states):
    cloud = Cloud()
    wanted = {
        MASTER: {"old": None, "new": f"openstack:///{MASTER}"},
        CLOUD_WORKER: {"old": None, "new": f"openstack:///{CLOUD_WORKER}"},
    }
    assert run(states, cloud, "provider_ids_set", "microk8s:nodes", test=True) == {
        "name": "microk8s:nodes",
        "result": None,
        "changes": wanted,
        "comment": f"providerIDs would be set on {MASTER}, {CLOUD_WORKER}",
    }
    assert cloud.actions == []
    assert run(states, cloud, "provider_ids_set", "microk8s:nodes") == {
        "name": "microk8s:nodes",
        "result": True,
        "changes": wanted,
        "comment": f"providerIDs set on {MASTER}, {CLOUD_WORKER}",
    }
    for test in (False, True):
        assert run(states, cloud, "provider_ids_set", "microk8s:nodes", test=test) == {
            "name": "microk8s:nodes",
            "result": True,
            "changes": {},
            "comment": "all 2 nodes have their providerID",
        }


def test_provider_ids_set_names_a_rebuilt_node_that_keeps_its_old_one_without_failing(states):
    cloud = Cloud(provider_ids={MASTER: None, CLOUD_WORKER: "openstack:///old"})
    result = run(states, cloud, "provider_ids_set", "microk8s:nodes")
    assert result == {
        "name": "microk8s:nodes",
        "result": True,
        "changes": {MASTER: {"old": None, "new": f"openstack:///{MASTER}"}},
        "comment": f"providerIDs set on {MASTER}; {CLOUD_WORKER.split('.')[0]} keeps openstack:///old of the "
        f"machine it replaced (not openstack:///{CLOUD_WORKER}): delete the Node object (microk8s kubectl delete "
        "node) and restart its microk8s to register it again",
    }
    assert cloud.actions == [("set_provider_id", MASTER.split(".")[0], f"openstack:///{MASTER}")]
    again = run(states, cloud, "provider_ids_set", "microk8s:nodes")
    assert (again["result"], again["changes"]) == (True, {})
    assert again["comment"].startswith("all 1 other nodes have their providerID; ")


def test_provider_ids_set_fails_naming_what_it_cannot_read(states):
    message = "pillar microk8s:nodes entry k8s-worker-0.lab.example has no instance_id"
    cloud = Cloud(fail={"provider_id_plan": message})
    assert run(states, cloud, "provider_ids_set", "microk8s:nodes") == {
        "name": "microk8s:nodes",
        "result": False,
        "changes": {},
        "comment": f"providerIDs cannot be set: {message}",
    }
    failing = Cloud(fail={"k8s-master": "microk8s kubectl patch node k8s-master ... failed (exit 1): Forbidden"})
    result = run(states, failing, "provider_ids_set", "microk8s:nodes")
    assert result["result"] is False
    assert result["changes"] == {CLOUD_WORKER: {"old": None, "new": f"openstack:///{CLOUD_WORKER}"}}
    assert result["comment"].startswith(f"providerIDs could not be set on {MASTER}: microk8s kubectl patch")


def test_cloud_config_secret_reports_checksums_only_and_is_idempotent(states):
    cloud = Cloud(secret=OLD_SHA)
    changes = {"cloud.conf sha256": {"old": OLD_SHA, "new": NEW_SHA}}
    assert run(states, cloud, "cloud_config_secret", SECRET_NAME, test=True) == {
        "name": SECRET_NAME,
        "result": None,
        "changes": changes,
        "comment": f"{SECRET_NAME} would hold cloud.conf sha256 {NEW_SHA}",
    }
    assert cloud.actions == []
    assert run(states, cloud, "cloud_config_secret", SECRET_NAME, ignore_volume_az=True) == {
        "name": SECRET_NAME,
        "result": True,
        "changes": changes,
        "comment": f"{SECRET_NAME} configured: cloud.conf sha256 {NEW_SHA}",
    }
    assert cloud.actions == [("cloud_config_apply", {"ignore_volume_az": True, "metadata_search_order": None})]
    assert run(states, cloud, "cloud_config_secret", SECRET_NAME) == {
        "name": SECRET_NAME,
        "result": True,
        "changes": {},
        "comment": f"{SECRET_NAME} holds cloud.conf sha256 {NEW_SHA}",
    }


def test_cloud_config_secret_fails_with_the_modules_reason(states):
    cloud = Cloud(fail={"cloud_config_plan": "pillar openstack:cloud:auth_url is missing"})
    assert run(states, cloud, "cloud_config_secret", SECRET_NAME) == {
        "name": SECRET_NAME,
        "result": False,
        "changes": {},
        "comment": "the cloud-config Secret cannot be checked: pillar openstack:cloud:auth_url is missing",
    }


def test_manifests_applied_asks_the_dry_run_then_applies_then_changes_nothing(states):
    cloud = Cloud()
    created = {"csidriver.storage.k8s.io/cinder.csi.openstack.org": {"old": None, "new": "created"}}
    assert run(states, cloud, "manifests_applied", "cpo", SOURCES, test=True) == {
        "name": "cpo",
        "result": None,
        "changes": created,
        "comment": "1 objects of cpo would change",
    }
    assert run(states, cloud, "manifests_applied", "cpo", SOURCES) == {
        "name": "cpo",
        "result": True,
        "changes": created,
        "comment": "cpo applied",
    }
    assert cloud.actions == [
        ("manifests_apply", SOURCES, True),
        ("manifests_apply", SOURCES, True),
        ("manifests_apply", SOURCES, False),
    ]
    assert run(states, cloud, "manifests_applied", "cpo", SOURCES) == {
        "name": "cpo",
        "result": True,
        "changes": {},
        "comment": "all 1 objects of cpo are applied",
    }


def test_default_storage_class_takes_the_default_from_hostpath_once(states):
    cloud = Cloud()
    changes = {
        "storageclass.storage.k8s.io/cinder": {"old": None, "new": "created"},
        "other defaults": {"old": ["microk8s-hostpath"], "new": []},
    }
    assert run(states, cloud, "default_storage_class", "cinder", test=True) == {
        "name": "cinder",
        "result": None,
        "changes": changes,
        "comment": "cinder would become the default StorageClass",
    }
    assert cloud.actions == []
    assert run(states, cloud, "default_storage_class", "cinder") == {
        "name": "cinder",
        "result": True,
        "changes": changes,
        "comment": "cinder is the default StorageClass",
    }
    assert run(states, cloud, "default_storage_class", "cinder") == {
        "name": "cinder",
        "result": True,
        "changes": {},
        "comment": "cinder is the only default StorageClass",
    }


class KubeliteArgument:
    """One of kubelite's arguments on a node, as the execution module reads and writes it."""

    def __init__(self, read, write, stored, current=None, fail_restart=None):
        self.read, self.write, self.stored = read, write, stored
        self.current = current
        self.fail_restart = fail_restart
        self.actions = []

    def functions(self):
        def set_argument(value):
            self.actions.append(("set", value))
            self.current = self.stored(value)

        def restart(timeout):
            self.actions.append(("restart_kubelite", timeout))
            if self.fail_restart:
                raise CommandExecutionError(self.fail_restart)
            return True

        return {
            "microk8s.status": lambda: {},
            self.read: lambda: self.current,
            self.write: set_argument,
            "microk8s.restart_kubelite": restart,
        }


def Kubelet(current=None, fail_restart=None):
    """A node's kubelet --cloud-provider."""
    read, write = "microk8s.kubelet_cloud_provider", "microk8s.set_kubelet_external_cloud_provider"
    return KubeliteArgument(read, write, lambda external: "external" if external else None, current, fail_restart)


def kubelet(states, node, external, test=False):
    use(states, node, test)
    return states.kubelet_external_cloud_provider("kubelet", external=external)


@pytest.mark.parametrize(
    ("current", "external", "shown"),
    [("external", True, "--cloud-provider=external"), (None, False, "no --cloud-provider")],
)
def test_a_kubelet_already_right_changes_nothing_in_test_mode_too(states, current, external, shown):
    node = Kubelet(current)
    for test in (False, True):
        assert kubelet(states, node, external, test) == {
            "name": "kubelet",
            "result": True,
            "changes": {},
            "comment": f"the kubelet already runs with {shown}",
        }
    assert node.actions == []


def test_the_kubelet_flag_is_predicted_then_set_with_one_restart_then_left_alone(states):
    node = Kubelet(None)
    changes = {"cloud_provider": {"old": None, "new": "external"}}
    assert kubelet(states, node, True, test=True) == {
        "name": "kubelet",
        "result": None,
        "changes": changes,
        "comment": "the kubelet would run with --cloud-provider=external (kubelite restarted)",
    }
    assert node.actions == []
    assert kubelet(states, node, True) == {
        "name": "kubelet",
        "result": True,
        "changes": changes,
        "comment": "the kubelet runs with --cloud-provider=external (kubelite restarted)",
    }
    assert node.actions == [("set", True), ("restart_kubelite", 300)]
    assert kubelet(states, node, True)["changes"] == {}
    assert node.actions == [("set", True), ("restart_kubelite", 300)]


def test_turning_the_cloud_integration_off_removes_the_flag_and_restarts(states):
    node = Kubelet("external")
    assert kubelet(states, node, False) == {
        "name": "kubelet",
        "result": True,
        "changes": {"cloud_provider": {"old": "external", "new": None}},
        "comment": "the kubelet runs with no --cloud-provider (kubelite restarted)",
    }
    assert node.actions == [("set", False), ("restart_kubelite", 300)]
    assert node.current is None


def test_a_kubelite_that_does_not_come_back_fails_the_state_with_what_changed(states):
    node = Kubelet(None, fail_restart="microk8s status failed (exit 1): microk8s is not running")
    assert kubelet(states, node, True) == {
        "name": "kubelet",
        "result": False,
        "changes": {"cloud_provider": {"old": None, "new": "external"}},
        "comment": (
            "the kubelet's arguments say --cloud-provider=external, but kubelite is not back: "
            "microk8s status failed (exit 1): microk8s is not running"
        ),
    }


def ApiServer(current=None, fail_restart=None):
    """A node's API server --advertise-address."""
    read, write = "microk8s.apiserver_advertise_address", "microk8s.set_apiserver_advertise_address"
    return KubeliteArgument(read, write, lambda address: address, current, fail_restart)


def advertise(states, node, address, test=False):
    use(states, node, test)
    return states.apiserver_advertise_address("apiserver", address=address)


def test_the_advertised_address_is_predicted_then_set_with_one_restart_then_left_alone(states):
    node = ApiServer(None)
    changes = {"advertise_address": {"old": None, "new": "10.1.0.10"}}
    assert advertise(states, node, "10.1.0.10", test=True) == {
        "name": "apiserver",
        "result": None,
        "changes": changes,
        "comment": "the API server would advertise 10.1.0.10 (kubelite restarted)",
    }
    assert node.actions == []
    assert advertise(states, node, "10.1.0.10") == {
        "name": "apiserver",
        "result": True,
        "changes": changes,
        "comment": "the API server advertises 10.1.0.10 (kubelite restarted)",
    }
    assert node.actions == [("set", "10.1.0.10"), ("restart_kubelite", 300)]
    for test in (False, True):
        assert advertise(states, node, "10.1.0.10", test) == {
            "name": "apiserver",
            "result": True,
            "changes": {},
            "comment": "the API server already advertises 10.1.0.10",
        }
    assert node.actions == [("set", "10.1.0.10"), ("restart_kubelite", 300)]


def test_an_api_server_that_does_not_come_back_fails_the_state_with_what_changed(states):
    node = ApiServer("192.0.2.10", fail_restart="microk8s status failed (exit 1): microk8s is not running")
    assert advertise(states, node, "10.1.0.10") == {
        "name": "apiserver",
        "result": False,
        "changes": {"advertise_address": {"old": "192.0.2.10", "new": "10.1.0.10"}},
        "comment": (
            "the API server's arguments say 10.1.0.10, but kubelite is not back: "
            "microk8s status failed (exit 1): microk8s is not running"
        ),
    }


@pytest.mark.parametrize("address", ["", "k8s-master", "10.1.0", "fd00::10", None])
def test_the_advertised_address_must_be_an_ipv4_address(states, address):
    node = ApiServer(None)
    assert advertise(states, node, address) == {
        "name": "apiserver",
        "result": False,
        "changes": {},
        "comment": f"address must be the node's IPv4 address, not {address!r}",
    }
    assert node.actions == []


def test_the_kubelet_state_refuses_anything_but_a_boolean(states):
    node = Kubelet(None)
    assert kubelet(states, node, "true") == {
        "name": "kubelet",
        "result": False,
        "changes": {},
        "comment": "external must be true or false, not 'true'",
    }
    assert node.actions == []
