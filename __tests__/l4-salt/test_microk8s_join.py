"""
The microk8s module's _join, the joiner's side of the join protocol: failed joins classified, the
token it reads from the mine, renewal asked for by event, and join_cluster's bounded retry loop
against a master behind a faked mine (the state microk8s.cluster_joined calls it once).
"""

from __future__ import annotations

import importlib
import json

import pytest
from microk8s_support import CP_JOINER, FIXTURES, MASTER, WORKER, fixture, ok
from salt.exceptions import CommandExecutionError


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


def test_the_join_url_on_the_masters_private_address_is_preferred(microk8s):
    join = importlib.import_module("microk8s._join")
    urls = json.loads(fixture("add-node.json"))["urls"]
    assert join.url_for(urls, "10.0.0.11") == urls[1]
    assert join.url_for(urls, "192.0.2.1") == urls[0]
    with pytest.raises(CommandExecutionError, match="without any URL"):
        join.url_for([], "10.1.0.10")


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
