"""accept-minion-keys.sh [--timeout S] [--interval S] ID..., against fake salt-key and salt."""

from __future__ import annotations

import pytest
from harness.provisioners import LAYOUT, lines

SALT, BASTION, MASTER = LAYOUT.salt_master.fqdn, LAYOUT.bastion.fqdn, LAYOUT.master.fqdn
WORKER0, WORKER1, INTRUDER = LAYOUT.worker(0).fqdn, LAYOUT.worker(1).fqdn, f"intruder.{LAYOUT.domain}"
EXPECTED = [SALT, BASTION, MASTER, WORKER0]
FAST = ["--timeout", "20", "--interval", "1"]
# A deadline that the first round of fake salt-key and salt (two Python processes each) cannot
# pass, however loaded the machine is, so a test of the timeout sees its waiting lines too: with
# 2 s, a parallel npm test (load 13 on 2 cores) reached it before the first line.
SHORT = "10"


def keys(accepted=(), pending=(), rejected=(), denied=()) -> dict:
    return {
        "minions": list(accepted),
        "minions_pre": list(pending),
        "minions_rejected": list(rejected),
        "minions_denied": list(denied),
    }


def everyone_answers(ids, from_call: int = 1) -> dict:
    return dict.fromkeys(ids, from_call)


def accepts(fakes) -> list[list[str]]:
    return [call for call in fakes.calls("salt-key") if call != ["--list=all", "--out=json"]]


def test_accepts_late_keys_one_by_one_and_waits_for_every_minion_to_answer(fakes):
    fakes.update(
        keys=keys(accepted=[SALT], pending=[BASTION]),
        # The master's key arrives at the second poll, the worker's (and a stranger's) at the third.
        arrivals={"2": {"minions_pre": [MASTER]}, "3": {"minions_pre": [WORKER0, INTRUDER]}},
        ping={SALT: 1, BASTION: 1, MASTER: 1, WORKER0: 2},
    )
    result = fakes.run("accept-minion-keys.sh", *FAST, *EXPECTED)
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        f"accepted minion key: {BASTION}",
        f"waiting for 2 of 4 minion keys: {MASTER}, {WORKER0} (N s left)",
        f"accepted minion key: {MASTER}",
        f"waiting for 1 of 4 minion keys: {WORKER0} (N s left)",
        f"accepted minion key: {WORKER0}",
        f"unexpected minion key left pending: {INTRUDER}",
        "all 4 minion keys accepted",
        f"waiting for 1 of 4 minions to answer test.ping: {WORKER0} (N s left)",
        "all 4 minions answer test.ping",
    ]
    assert accepts(fakes) == [
        ["-y", f"--accept={BASTION}"],
        ["-y", f"--accept={MASTER}"],
        ["-y", f"--accept={WORKER0}"],
    ]
    assert fakes.read()["keys"]["minions_pre"] == [INTRUDER]
    # test.ping through manage.status: a ping a minion misses (not connected yet) costs 10 + 5 s,
    # not salt's 10 s and then master.conf's gather_job_timeout of 30 s.
    ping = [
        "--out=json",
        "manage.status",
        f"tgt={','.join(EXPECTED)}",
        "tgt_type=list",
        "timeout=10",
        "gather_job_timeout=5",
    ]
    assert fakes.calls("salt-run") == [ping] * 2
    assert fakes.calls("salt") == []


def test_an_unexpected_key_is_reported_once_and_never_accepted(fakes):
    fakes.update(
        keys=keys(accepted=[SALT], pending=[INTRUDER]),
        arrivals={"3": {"minions_pre": [BASTION]}},
        ping=everyone_answers([SALT, BASTION]),
    )
    result = fakes.run("accept-minion-keys.sh", *FAST, SALT, BASTION)
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout).count(f"unexpected minion key left pending: {INTRUDER}") == 1
    assert accepts(fakes) == [["-y", f"--accept={BASTION}"]]
    assert fakes.read()["keys"]["minions_pre"] == [INTRUDER]


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (
            keys(accepted=[SALT, WORKER0], denied=[WORKER0]),
            f"minion key of {WORKER0} is denied: the minion presented a different key while its old one is accepted "
            f"(a rebuilt machine?); if the machine is genuine, run 'salt-key -y --delete={WORKER0}' on "
            f"salt.lab.example.org, restart salt-minion on {WORKER0} and apply again",
        ),
        (
            keys(accepted=[SALT], rejected=[WORKER0]),
            f"minion key of {WORKER0} is rejected on salt.lab.example.org; if the machine is genuine, run "
            f"'salt-key -y --delete={WORKER0}' on salt.lab.example.org, restart salt-minion on {WORKER0} "
            "and apply again",
        ),
    ],
    ids=["denied", "rejected"],
)
def test_a_denied_or_rejected_expected_key_fails_at_once(fakes, state, message):
    fakes.update(keys=state)
    result = fakes.run("accept-minion-keys.sh", *FAST, SALT, WORKER0)
    assert (result.returncode, result.stdout, result.stderr) == (1, "", message + "\n")
    assert accepts(fakes) == []
    assert len(fakes.calls("salt-key")) == 1


def test_records_the_machine_of_each_key_it_accepts(fakes, tmp_path):
    fakes.update(keys=keys(accepted=[SALT], pending=[WORKER0]), ping=everyone_answers([SALT, WORKER0]))
    result = fakes.run("accept-minion-keys.sh", *FAST, f"{SALT}=m-salt", f"{WORKER0}=m-worker-1")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout)[0] == f"accepted minion key: {WORKER0}"
    # The Salt master's key was accepted before (its own cloud-init): recorded once its minion
    # answered with it.
    assert lines(result.stdout)[-1] == f"recorded the machine of each key accepted before: {SALT} m-salt"
    assert (tmp_path / "fakes" / "machines").read_text().splitlines() == [f"{WORKER0} m-worker-1", f"{SALT} m-salt"]


def test_records_a_key_accepted_before_once_its_minion_answers_so_a_later_replacement_deletes_it(fakes, tmp_path):
    # A cluster deployed before the record existed (the upgrade rehearsal's dc03610): every key was
    # accepted, none recorded. A minion that answers test.ping with its accepted key runs on the
    # machine Terraform names: a machine it replaced is gone by this step and answers nothing.
    (tmp_path / "fakes" / "machines").write_text(f"{BASTION} m-bastion\n")
    fakes.update(keys=keys(accepted=[SALT, BASTION, WORKER0]), ping=everyone_answers([SALT, BASTION, WORKER0]))
    machines = [f"{SALT}=m-salt", f"{BASTION}=m-bastion", f"{WORKER0}=m-worker-1"]
    result = fakes.run("accept-minion-keys.sh", *FAST, *machines)
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout) == [
        "all 3 minion keys accepted",
        "all 3 minions answer test.ping",
        f"recorded the machine of each key accepted before: {SALT} m-salt, {WORKER0} m-worker-1",
    ]
    recorded = (tmp_path / "fakes" / "machines").read_text().splitlines()
    assert sorted(recorded) == sorted([f"{BASTION} m-bastion", f"{SALT} m-salt", f"{WORKER0} m-worker-1"])
    # So the next apply, with the worker's machine replaced, deletes its old key and takes the new one.
    fakes.update(keys=keys(accepted=[SALT, BASTION, WORKER0]), arrivals={"3": {"minions_pre": [WORKER0]}})
    replaced = fakes.run("accept-minion-keys.sh", *FAST, *machines[:2], f"{WORKER0}=m-worker-2")
    assert replaced.returncode == 0, replaced.stderr
    deleted = f"deleted the minion key of {WORKER0}: its machine m-worker-1 was replaced by m-worker-2"
    assert lines(replaced.stdout)[0] == deleted


def test_records_no_key_accepted_before_whose_minion_does_not_answer(fakes, tmp_path):
    fakes.update(keys=keys(accepted=[SALT, WORKER0]), ping={SALT: 1})
    machines = [f"{SALT}=m-salt", f"{WORKER0}=m-worker-2"]
    result = fakes.run("accept-minion-keys.sh", "--timeout", SHORT, "--interval", "1", *machines)
    assert result.returncode == 1
    assert f"waiting for minions to answer test.ping: {WORKER0}" in result.stderr
    assert not (tmp_path / "fakes" / "machines").exists()


def test_deletes_the_key_of_a_machine_terraform_replaced_and_accepts_the_new_one(fakes, tmp_path):
    (tmp_path / "fakes" / "machines").write_text(f"{BASTION} m-bastion\n{WORKER0} m-worker-1\n")
    fakes.update(
        # The new machine presented its key while the old one was still accepted: denied.
        keys=keys(accepted=[SALT, BASTION, WORKER0], denied=[WORKER0]),
        # Poll 1 finds the replaced machine's keys, poll 2 none for it, poll 3 its new one.
        arrivals={"3": {"minions_pre": [WORKER0]}},
        ping=everyone_answers([SALT, BASTION, WORKER0]),
    )
    machines = [f"{SALT}=m-salt", f"{BASTION}=m-bastion", f"{WORKER0}=m-worker-2"]
    result = fakes.run("accept-minion-keys.sh", *FAST, *machines)
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout)[:5] == [
        f"deleted the minion key of {WORKER0}: its machine m-worker-1 was replaced by m-worker-2",
        f"waiting for 1 of 3 minion keys: {WORKER0} (N s left)",
        f"accepted minion key: {WORKER0}",
        "all 3 minion keys accepted",
        f"restarting salt-minion on {WORKER0}: a minion whose key was denied returns nothing until it restarts",
    ]
    assert accepts(fakes) == [["-y", f"--delete={WORKER0}"], ["-y", f"--accept={WORKER0}"]]
    restart = ["--async", "--list", WORKER0, "cmd.run_bg", "salt-call --local service.restart salt-minion"]
    assert fakes.calls("salt")[0] == restart
    recorded = (tmp_path / "fakes" / "machines").read_text().splitlines()
    # The Salt master's key, accepted before, is recorded once its minion answered.
    assert sorted(recorded) == sorted([f"{BASTION} m-bastion", f"{WORKER0} m-worker-2", f"{SALT} m-salt"])


def test_a_new_machines_key_denied_as_the_old_one_is_deleted_is_deleted_too_and_accepted_once_it_asks_again(
    fakes, tmp_path
):
    # The race the rehearsal's roll lost (1 in 2 runs, and in CI's run of f42712d): the new
    # machine's minion asked while the master still held the old key, and the master wrote its key
    # to minions_denied after salt-key had deleted the old one (salt/channel/server.py, _auth:
    # it reads the accepted key, then writes the denied one). The minion asks again (rejected_retry)
    # and its key is pending then.
    (tmp_path / "fakes" / "machines").write_text(f"{WORKER0} m-worker-1\n")
    fakes.update(
        keys=keys(accepted=[SALT, WORKER0]),
        # Poll 1 finds the old key, poll 2 the new machine's denied one, poll 4 it pending.
        arrivals={"2": {"minions_denied": [WORKER0]}, "4": {"minions_pre": [WORKER0]}},
        ping=everyone_answers([SALT, WORKER0]),
    )
    result = fakes.run("accept-minion-keys.sh", *FAST, SALT, f"{WORKER0}=m-worker-2")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout)[:6] == [
        f"deleted the minion key of {WORKER0}: its machine m-worker-1 was replaced by m-worker-2",
        f"deleted the denied minion key of {WORKER0}: its new machine presented it before the old one was deleted",
        f"waiting for 1 of 2 minion keys: {WORKER0} (N s left)",
        f"waiting for 1 of 2 minion keys: {WORKER0} (N s left)",
        f"accepted minion key: {WORKER0}",
        "all 2 minion keys accepted",
    ]
    delete, accept = ["-y", f"--delete={WORKER0}"], ["-y", f"--accept={WORKER0}"]
    assert accepts(fakes) == [delete, delete, accept]
    assert (tmp_path / "fakes" / "machines").read_text() == f"{WORKER0} m-worker-2\n"


def test_a_second_denied_key_of_a_replaced_machine_still_fails(fakes, tmp_path):
    # Only the one key in flight as the old one went can be the new machine's: once it is deleted,
    # the minion's next key is pending, so another denied one is a third key, for an operator.
    (tmp_path / "fakes" / "machines").write_text(f"{WORKER0} m-worker-1\n")
    fakes.update(
        keys=keys(accepted=[SALT, WORKER0]),
        arrivals={"2": {"minions_denied": [WORKER0]}, "3": {"minions_denied": [WORKER0]}},
    )
    result = fakes.run("accept-minion-keys.sh", *FAST, SALT, f"{WORKER0}=m-worker-2")
    assert result.returncode == 1
    assert f"minion key of {WORKER0} is denied" in result.stderr
    assert accepts(fakes) == [["-y", f"--delete={WORKER0}"], ["-y", f"--delete={WORKER0}"]]


def test_a_new_machines_pending_key_is_accepted_as_it_is_when_the_old_key_is_gone(fakes, tmp_path):
    # Scaled down (remove-node.sh deleted the key) and up again: the pending key is the new one's.
    (tmp_path / "fakes" / "machines").write_text(f"{WORKER0} m-worker-1\n")
    fakes.update(keys=keys(accepted=[SALT], pending=[WORKER0]), ping=everyone_answers([SALT, WORKER0]))
    result = fakes.run("accept-minion-keys.sh", *FAST, SALT, f"{WORKER0}=m-worker-2")
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout)[0] == f"accepted minion key: {WORKER0}"
    assert accepts(fakes) == [["-y", f"--accept={WORKER0}"]]
    assert (tmp_path / "fakes" / "machines").read_text() == f"{WORKER0} m-worker-2\n"


def test_a_denied_key_of_the_same_machine_still_fails(fakes, tmp_path):
    (tmp_path / "fakes" / "machines").write_text(f"{WORKER0} m-worker-1\n")
    fakes.update(keys=keys(accepted=[SALT, WORKER0], denied=[WORKER0]))
    result = fakes.run("accept-minion-keys.sh", *FAST, SALT, f"{WORKER0}=m-worker-1")
    assert result.returncode == 1
    assert f"minion key of {WORKER0} is denied" in result.stderr
    assert accepts(fakes) == []


def test_times_out_naming_the_missing_keys(fakes):
    fakes.update(keys=keys(accepted=[SALT]), ping=everyone_answers(EXPECTED))
    result = fakes.run("accept-minion-keys.sh", f"--timeout={SHORT}", "--interval=1", SALT, WORKER0, WORKER1)
    assert result.returncode == 1
    assert result.stderr == f"timed out after {SHORT} s waiting for minion keys: {WORKER0}, {WORKER1}\n"
    assert set(lines(result.stdout)) == {f"waiting for 2 of 3 minion keys: {WORKER0}, {WORKER1} (N s left)"}
    assert fakes.calls("salt") == []
    assert fakes.calls("salt-run") == []


def test_times_out_naming_the_minions_that_do_not_answer(fakes):
    fakes.update(keys=keys(accepted=[SALT, WORKER0]), ping={SALT: 1})
    result = fakes.run("accept-minion-keys.sh", "--timeout", SHORT, "--interval", "1", SALT, WORKER0)
    assert result.returncode == 1
    assert result.stderr == f"timed out after {SHORT} s waiting for minions to answer test.ping: {WORKER0}\n"
    assert lines(result.stdout)[:2] == [
        "all 2 minion keys accepted",
        f"waiting for 1 of 2 minions to answer test.ping: {WORKER0} (N s left)",
    ]


def test_a_failing_salt_is_waited_out_and_named_in_the_timeout(fakes):
    timed_out = "Salt request timed out. The master is not responding. You may need to run your command with `--async`"
    fakes.update(keys=keys(accepted=[SALT]), salt_error=timed_out)
    result = fakes.run("accept-minion-keys.sh", "--timeout", "1", "--interval", "1", SALT)
    assert result.returncode == 1
    assert result.stderr == f"timed out after 1 s waiting for minions to answer test.ping: {SALT} (salt: {timed_out})\n"
    assert len(fakes.calls("salt-run")) >= 1


def test_a_failing_salt_key_is_an_error(fakes):
    fakes.update(salt_key_error="[ERROR   ] Unable to read /etc/salt/pki/master: Permission denied")
    result = fakes.run("accept-minion-keys.sh", *FAST, SALT)
    assert result.returncode == 1
    assert result.stderr == (
        "salt-key --list=all failed on salt.lab.example.org: "
        "[ERROR   ] Unable to read /etc/salt/pki/master: Permission denied\n"
    )


USAGE = "usage: accept-minion-keys.sh [--timeout SECONDS] [--interval SECONDS] MINION_ID[=MACHINE_ID]...\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "no minion ids given"),
        (("--timeout", "0", SALT), '--timeout must be a positive whole number of seconds, got "0"'),
        (("--interval=soon", SALT), '--interval must be a positive whole number of seconds, got "soon"'),
        (("--timeout",), "--timeout needs a value"),
        (("--accept-all", SALT), "unknown option --accept-all"),
        (("k8s-*.lab.example.org",), 'minion id "k8s-*.lab.example.org" is not a lower-case DNS name'),
        (("K8s-Master.lab.example.org",), 'minion id "K8s-Master.lab.example.org" is not a lower-case DNS name'),
        ((f"{SALT},{BASTION}",), f'minion id "{SALT},{BASTION}" is not a lower-case DNS name'),
        (("-bad.lab.example.org",), "unknown option -bad.lab.example.org"),
        (("--", "-bad.lab.example.org"), 'minion id "-bad.lab.example.org" is not a lower-case DNS name'),
        (("bad..example.org",), 'minion id "bad..example.org" is not a lower-case DNS name'),
        ((SALT, SALT), f"minion id {SALT} is given twice"),
        ((f"{SALT}=m-1", f"{SALT}=m-2"), f"minion id {SALT} is given twice"),
        ((f"{SALT}=$(reboot)",), f'machine id of {SALT} must be letters, digits and dashes, got "$(reboot)"'),
    ],
)
def test_usage_errors(fakes, args, message):
    result = fakes.run("accept-minion-keys.sh", *args)
    assert (result.returncode, result.stderr) == (2, f"accept-minion-keys.sh: {message}\n{USAGE}")
    assert fakes.calls("salt-key") == []
