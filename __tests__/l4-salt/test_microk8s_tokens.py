"""
The microk8s module's _tokens, the issuer's side of the join protocol: add-node tokens, one per
pending joiner, the ledger and the mine function join_tokens, withdrawal and renewal, over the
fake master and its two joiners.
"""

from __future__ import annotations

import importlib
import json
import stat

import pytest
from microk8s_support import CP, CP_JOINER, MASTER, PILLAR, WORKER, Cluster, fake_cli, fixture, ok
from salt.exceptions import CommandExecutionError


def test_add_node_issues_a_single_use_token_by_default_and_parses_json(microk8s):
    args = ("add-node", "--format", "json", "--token-ttl", "-1")
    microk8s.__salt__ = {"cmd.run_all": fake_cli({args: ok(fixture("add-node.json"))})}
    assert microk8s.add_node() == json.loads(fixture("add-node.json"))


def test_add_node_passes_a_chosen_token_and_ttl(microk8s):
    args = ("add-node", "--format", "json", "--token-ttl", "600", "--token", "a" * 32)
    cli = fake_cli({args: ok(fixture("add-node.json"))})
    microk8s.__salt__ = {"cmd.run_all": cli}
    assert microk8s.add_node(token="a" * 32, ttl=600)["urls"][0].startswith("10.1.0.10:25000/")
    assert cli.calls == [("microk8s", *args)]


def test_the_token_file_tells_single_use_from_expiring_tokens(microk8s):
    tokens_module = importlib.import_module("microk8s._tokens")
    tokens = tokens_module.parse_cluster_tokens(fixture("cluster-tokens.txt"))
    assert tokens == {"2f1f9b8e0c7d4a3b9e6f5d4c3b2a1908": None, "9a8b7c6d5e4f30211f2e3d4c5b6a7980": 1700003600}
    assert tokens_module.token_is_live("2f1f9b8e0c7d4a3b9e6f5d4c3b2a1908", tokens, now=2e9)
    assert tokens_module.token_is_live("9a8b7c6d5e4f30211f2e3d4c5b6a7980", tokens, now=1700000000)
    # Expiring within the margin counts as spent: a joiner could not use it in time.
    assert not tokens_module.token_is_live("9a8b7c6d5e4f30211f2e3d4c5b6a7980", tokens, now=1700003500)
    assert not tokens_module.token_is_live("unknown", tokens, now=0)


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
