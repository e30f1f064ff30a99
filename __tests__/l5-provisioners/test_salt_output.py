"""
provisioners/salt_output.py, the reader of Salt's JSON, over output captured from a real Salt
3007 master and minions (fixtures/) and the shapes Salt's source documents.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import sys

import pytest
from harness.provisioners import FIXTURES, PROVISIONERS
from harness.real_salt import FAILED_LINES


def load_salt_output():
    """The helper imported by path, leaving no __pycache__ in provisioners/ for Terraform to upload."""
    spec = importlib.util.spec_from_file_location("salt_output", PROVISIONERS / "salt_output.py")
    module = importlib.util.module_from_spec(spec)
    sys.dont_write_bytecode, saved = True, sys.dont_write_bytecode
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = saved
    return module


salt_output = load_salt_output()

SALT_KEY = json.dumps(
    {
        "minions": ["k8s-master.lab.example", "k8s-worker-0.lab.example"],
        "minions_pre": ["intruder.lab.example", "k8s-worker-1.lab.example"],
        "minions_rejected": ["k8s-worker-2.lab.example"],
        "minions_denied": ["k8s-worker-0.lab.example"],
    },
    indent=4,
)


def events(outcome: str) -> list[tuple[str, dict]]:
    pairs = [line.split("\t", 1) for line in (FIXTURES / f"state-event-{outcome}.txt").read_text().splitlines()]
    return [(tag, json.loads(payload)) for tag, payload in pairs]


def test_parses_with_the_python_of_ubuntu_20_04():
    ast.parse((PROVISIONERS / "salt_output.py").read_text(), feature_version=(3, 8))


def test_finds_the_json_after_salts_notices():
    text = "No minions matched the target. No command was sent, no jid was assigned.\n{}\n"
    assert salt_output.json_documents(text) == [{}]
    assert salt_output.json_documents('[ERROR   ] {not json}\n{\n    "a": true\n}\n') == [{"a": True}]
    assert salt_output.json_documents("Salt request timed out.\n") == []


def test_key_status_puts_denied_first_and_lists_unexpected_pending_keys():
    expected = ["k8s-master.lab.example", "k8s-worker-0.lab.example", "k8s-worker-1.lab.example"]
    assert salt_output.key_status([*expected, "k8s-worker-2.lab.example", "gone.lab.example"], SALT_KEY) == [
        "accepted k8s-master.lab.example",
        "denied k8s-worker-0.lab.example",
        "pending k8s-worker-1.lab.example",
        "rejected k8s-worker-2.lab.example",
        "absent gone.lab.example",
        "unexpected intruder.lab.example",
    ]


def test_key_status_reads_lists_salt_key_left_out_as_empty_and_rejects_no_json():
    assert salt_output.key_status(["a.example"], '{"minions": []}') == ["absent a.example"]
    with pytest.raises(ValueError, match="no JSON"):
        salt_output.key_status(["a.example"], "")


def test_only_true_is_an_answer_to_test_ping():
    text = json.dumps({"a.example": True, "b.example": False, "c.example": "Minion did not return. [No response]"})
    assert salt_output.answered(["a.example", "b.example", "c.example", "d.example"], text) == ["a.example"]


def test_up_lists_the_minions_manage_status_found_up_and_nothing_without_its_json():
    text = json.dumps({"up": ["b.example", "a.example"], "down": ["c.example"]})
    assert salt_output.up(["a.example", "b.example", "c.example", "d.example"], text) == ["a.example", "b.example"]
    assert salt_output.up(["a.example"], "Salt request timed out.") == []
    assert salt_output.up(["a.example"], '{"a.example": true}') == []


@pytest.mark.parametrize(
    ("text", "result"),
    [
        ('{"m.example": true}', "removed"),
        ('{"m.example": false}', "absent"),
        ("No minions matched the target. No command was sent, no jid was assigned.\n{}\n", "no-answer"),
        ('{"m.example": "ERROR: remove-node failed\\nsecond line"}', "error ERROR: remove-node failed"),
        ('{"m.example": 3}', "error 3"),
        # A master that took the job and went silent did not answer, as for the other readers.
        ('{"m.example": {"failed": true}}', "no-answer"),
        ('{"m.example": "Minion did not return. [No response]"}', "no-answer"),
    ],
)
def test_forget_node_results(text, result):
    assert salt_output.forget_node("m.example", text) == result


def vacated(**value) -> str:
    base = {"outcome": None, "node": None, "member": None, "seconds": 0, "reason": None}
    return json.dumps({"m.example": {**base, **value}})


@pytest.mark.parametrize(
    ("text", "result"),
    [
        (vacated(outcome="drained", node="k8s-worker-1", seconds=12), "drained k8s-worker-1 12"),
        (
            vacated(outcome="gave-up", node="k8s-worker-1", seconds=300, reason="global timeout reached: 300s"),
            "gave-up k8s-worker-1 300 global timeout reached: 300s",
        ),
        (vacated(outcome="no-node", member="voter"), "no-node"),
        (vacated(outcome="absent"), "absent"),
        (
            vacated(outcome="refused", node="k8s-worker-1", member="voter", reason="refusing to remove k8s-worker-1"),
            "refused refusing to remove k8s-worker-1",
        ),
        ("No minions matched the target. No command was sent, no jid was assigned.\n{}\n", "no-answer"),
        # salt --static's batch enters a minion that took the job and went silent as failed.
        ('{"m.example": {"failed": true}}', "no-answer"),
        ('{"m.example": "ERROR: microk8s status failed"}', "error ERROR: microk8s status failed"),
        ('{"m.example": {"outcome": "surprise"}}', 'error {"outcome": "surprise"}'),
    ],
)
def test_vacate_node_results(text, result):
    assert salt_output.vacate_node("m.example", text) == result


@pytest.mark.parametrize(
    ("text", "result"),
    [
        ('{"n.example": "Generating new cluster certificates.\\nWaiting for node to start."}', "left"),
        ('{"n.example": ""}', "left"),
        ("No minions matched the target. No command was sent, no jid was assigned.\n{}\n", "no-answer"),
        ('{"n.example": {"failed": true}}', "no-answer"),
        ('{"n.example": "Minion did not return. [No response]"}', "no-answer"),
        (
            '{"n.example": "ERROR: microk8s leave failed (exit 2): Not in clustering mode."}',
            "error ERROR: microk8s leave failed (exit 2): Not in clustering mode.",
        ),
        ('{"n.example": "\'microk8s.leave\' is not available."}', "error 'microk8s.leave' is not available."),
        ('{"n.example": false}', "error false"),
    ],
)
def test_leave_results(text, result):
    assert salt_output.leave("n.example", text) == result


@pytest.mark.parametrize(
    ("text", "result"),
    [
        ('{"a.example": {"required": true, "packages": []}, "b.example": {"required": false}}', "needs a.example"),
        ('{"b.example": {"required": true}, "a.example": {"required": true}}', "needs a.example b.example"),
        ('{"a.example": {"required": false}, "b.example": {"required": false}}', "needs"),
        ('{"a.example": {"required": false}}', "no-answer b.example"),
        ('{"a.example": {"failed": true}, "b.example": {"required": true}}', "no-answer a.example"),
        (
            '{"a.example": {"required": false}, "b.example": "Minion did not return. [No response]"}',
            "no-answer b.example",
        ),
        (
            '{"a.example": "\'kube_on_os.reboot_required\' is not available.", "b.example": {"required": true}}',
            "error a.example 'kube_on_os.reboot_required' is not available.",
        ),
        ('{"a.example": {"required": "yes"}, "b.example": {"required": true}}', 'error a.example {"required": "yes"}'),
    ],
)
def test_reboot_plan_results_in_the_order_of_the_nodes_given(text, result):
    assert salt_output.reboot_plan(["a.example", "b.example"], text) == result


@pytest.mark.parametrize(
    ("text", "result"),
    [
        (
            '{"m.example": {"channel": "1.35/stable", "roll": ["m.example"], "current": {"m.example": "v1.34.0", '
            '"w.example": "v1.35.0"}, "steps": [{"channel": "1.35/stable", "roll": ["m.example"]}]}}',
            "roll 2 1.35/stable m.example\nstep 1.35/stable m.example",
        ),
        (
            '{"m.example": {"channel": "1.30/beta", "roll": ["m.example", "w.example"], "current": {"m.example": '
            '"v1.29.1", "w.example": "v1.28.15"}, "steps": [{"channel": "1.29/beta", "roll": ["w.example"]}, '
            '{"channel": "1.30/beta", "roll": ["m.example", "w.example"]}]}}',
            "roll 2 1.30/beta m.example w.example\nstep 1.29/beta w.example\nstep 1.30/beta m.example w.example",
        ),
        (
            '{"m.example": {"channel": "1.28/stable", "roll": [], "current": {"m.example": "v1.28.15"}, "steps": []}}',
            "roll 1 1.28/stable",
        ),
        ('{"m.example": {"channel": null, "roll": [], "current": {}, "steps": []}}', "roll 0 -"),
        # The microk8s module loads only once the snap is installed: Salt 3007 answers with its reason.
        (
            '{"m.example": "\'microk8s\' __virtual__ returned False: the microk8s execution module needs '
            'the microk8s binary on PATH"}',
            "absent",
        ),
        # A module that was never synced is another matter.
        (
            '{"m.example": "\'microk8s.upgrade_plan\' is not available."}',
            "error 'microk8s.upgrade_plan' is not available.",
        ),
        ('{"m.example": {"failed": true}}', "no-answer"),
        ('{"m.example": "ERROR: m.example runs v1.33.0: no"}', "error ERROR: m.example runs v1.33.0: no"),
        # A plan without its steps (a module older than the chain's) is not guessed at.
        ('{"m.example": {"roll": [], "current": {}}}', 'error {"roll": [], "current": {}}'),
    ],
    ids=[
        "roll",
        "roll two minors",
        "nothing to roll",
        "nothing installed",
        "no snap",
        "not synced",
        "no answer",
        "refused",
        "no steps",
    ],
)
def test_upgrade_plan_results(text, result):
    assert salt_output.upgrade_plan("m.example", text) == result


def test_one_line_takes_a_tracebacks_last_line_and_caps_the_length():
    traceback = "The minion function caused an exception: Traceback (most recent call last):\n  File x\nKeyError: 'a'\n"
    assert salt_output.one_line(traceback) == "KeyError: 'a'"
    assert salt_output.one_line("\n first \nsecond") == "first"
    assert salt_output.one_line(["one\ntwo", "three"]) == "one; three"
    assert salt_output.one_line("x" * 400) == "x" * 297 + "..."
    assert salt_output.one_line("") == "(no message)"


def test_job_return_lines_from_real_state_event_output():
    lines = [salt_output.job_return_line(tag, data) for tag, data in events("failed")]
    assert lines == FAILED_LINES


def test_job_return_lines_skip_housekeeping_and_report_render_errors():
    tag = "salt/job/20260101000000000000/ret/k8s-worker-0.lab.example"
    ping = {"id": "k8s-worker-0.lab.example", "fun": "test.ping", "return": True, "retcode": 0, "success": True}
    assert salt_output.job_return_line(tag, ping) is None
    assert salt_output.job_return_line(tag, {**ping, "fun": "saltutil.find_job", "return": {}}) is None
    assert salt_output.job_return_line("salt/run/20260101000000000000/ret", ping) is None
    render_error = {
        **ping,
        "fun": "state.highstate",
        "return": ["Rendering SLS 'base:microk8s.joined' failed: Jinja variable 'dict object' has no attribute 'x'"],
        "retcode": 1,
        "success": False,
    }
    assert salt_output.job_return_line(tag, render_error) == (
        "[k8s-worker-0.lab.example] state.highstate: failed: "
        "Rendering SLS 'base:microk8s.joined' failed: Jinja variable 'dict object' has no attribute 'x'"
    )


def test_a_check_that_orch_deploy_asks_again_reads_not_yet_instead_of_failed():
    """kube_on_os.minion_options fails until a minion restarted with its new options: not a failure."""
    tag = "salt/job/20260101000000000000/ret/k8s-worker-0.lab.example"
    waiting = {
        "id": "k8s-worker-0.lab.example",
        "fun": "kube_on_os.minion_options",
        "return": (
            "ERROR: salt-minion runs with master_alive_interval 0 (core.minion wrote 60): "
            "it has not restarted since core.minion wrote them"
        ),
        "retcode": 1,
        "success": False,
    }
    assert salt_output.job_return_line(tag, waiting) == (
        "[k8s-worker-0.lab.example] kube_on_os.minion_options: not yet, asked again: "
        "salt-minion runs with master_alive_interval 0 (core.minion wrote 60): "
        "it has not restarted since core.minion wrote them"
    )
    running = {**waiting, "return": {"options": {"master_alive_interval": 60}}, "retcode": 0, "success": True}
    assert salt_output.job_return_line(tag, running) == "[k8s-worker-0.lab.example] kube_on_os.minion_options: ok"


def test_orchestration_summaries_from_real_salt_run_output():
    succeeded = (FIXTURES / "orchestrate-succeeded.out").read_text()
    failed = (FIXTURES / "orchestrate-failed.out").read_text()
    assert salt_output.orchestration("orch.x", "12", succeeded) == (
        0,
        "orchestration orch.x succeeded in 12 s: 2 steps, 2 states changed on 2 minions",
    )
    code, message = salt_output.orchestration("orch.x", "12", failed)
    assert code == 1
    assert message.startswith("orchestration orch.x failed: orch-test-salt-state-workers: k8s-worker-0.lab.example: ")


def test_orchestration_reports_a_minion_that_did_not_return_and_a_bare_retcode():
    step = {
        "salt_|-orch-deploy-salt-state-workers_|-orch-deploy-salt-state-workers_|-state": {
            "result": False,
            "comment": "Run failed on minions: k8s-worker-1.lab.example.org\nMinion k8s-worker-1... did not return",
            "changes": {"out": "highstate", "ret": {"k8s-worker-1.lab.example.org": False}},
            "__id__": "orch-deploy-salt-state-workers",
            "__run_num__": 0,
        }
    }
    document = json.dumps({"data": {"salt_master": step}, "outputter": "highstate", "retcode": 1})
    assert salt_output.orchestration("orch.deploy", "1", document) == (
        1,
        "orchestration orch.deploy failed: orch-deploy-salt-state-workers: k8s-worker-1.lab.example.org: "
        "no state result (the minion did not return)",
    )
    quiet = json.dumps({"data": {"salt_master": {}}, "outputter": "highstate", "retcode": 2})
    assert salt_output.orchestration("orch.deploy", "1", quiet) == (
        1,
        "orchestration orch.deploy failed: salt-run returned retcode 2",
    )
    assert salt_output.orchestration("orch.deploy", "1", "Salt request timed out.\n")[0] == 3


def test_state_event_lines_give_their_tag_and_the_job_return_line():
    text = (FIXTURES / "state-event-failed.txt").read_text()
    read = [salt_output.state_event(line) for line in text.splitlines()]
    assert [line for _, line in read if line] == FAILED_LINES
    assert [tag for tag, _ in read] == [line.split("\t", 1)[0] for line in text.splitlines()]
    assert salt_output.state_event("kube-on-os/orchestrate/ready/1-2\t{}") == ("kube-on-os/orchestrate/ready/1-2", None)
    assert salt_output.state_event("salt/job/1/ret/a.example\tnot json") == ("salt/job/1/ret/a.example", None)
    assert salt_output.state_event('salt/job/1/ret/a.example\t["a list"]') == ("salt/job/1/ret/a.example", None)


# --- the command line, as the provisioner scripts run it: stdin in, lines and an exit status out


def run(monkeypatch, capsys, argv: list[str], stdin: str = "") -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    try:
        status = salt_output.main(argv)
    except SystemExit as exit:
        status = exit.code
    output = capsys.readouterr()
    return status, output.out, output.err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["events", "--ready-tag", "r", "--done-tag", "d", "--ready-file", "f", "--", "salt-run", "state.event"],
        ["key-status", "--all"],
        ["leave"],
        ["leave", "a.example", "b.example"],
        ["reboot-plan"],
        ["local-states", "salt_master"],
        ["orchestration", "orch.deploy", "12"],
        ["vacate", "a.example"],
    ],
    ids=lambda argv: " ".join(argv) or "nothing",
)
def test_a_bad_command_line_exits_2_with_the_usage_and_reads_nothing(monkeypatch, capsys, argv):
    status, out, err = run(monkeypatch, capsys, argv, stdin="{}")
    assert (status, out) == (2, "")
    assert err.startswith("usage: salt_output.py")
    assert err.splitlines()[-1].startswith("salt_output.py")
    assert ": error: " in err.splitlines()[-1]
    assert sys.stdin.read() == "{}"


def test_every_command_line_of_the_scripts_prints_its_readers_lines(monkeypatch, capsys):
    assert run(monkeypatch, capsys, ["key-status", "k8s-master.lab.example", "gone.lab.example"], SALT_KEY) == (
        0,
        "accepted k8s-master.lab.example\nabsent gone.lab.example\nunexpected intruder.lab.example\n"
        "unexpected k8s-worker-1.lab.example\n",
        "",
    )
    pings = '{"a.example": true, "b.example": false, "c.example": true}'
    assert run(monkeypatch, capsys, ["answered"], pings) == (0, "a.example\nc.example\n", "")
    assert run(monkeypatch, capsys, ["answered", "b.example", "c.example"], pings) == (0, "c.example\n", "")
    assert run(monkeypatch, capsys, ["up", "a.example", "b.example"], '{"up": ["b.example"]}') == (0, "b.example\n", "")
    assert run(monkeypatch, capsys, ["up", "a.example"], "") == (0, "\n", "")
    assert run(monkeypatch, capsys, ["forget-node", "m.example"], '{"m.example": true}') == (0, "removed\n", "")
    assert run(monkeypatch, capsys, ["leave", "n.example"], "{}") == (0, "no-answer\n", "")
    assert run(monkeypatch, capsys, ["drained", "m.example"], '{"m.example": {"node": "n"}}') == (0, "drained n\n", "")
    assert run(monkeypatch, capsys, ["vacate-node", "m.example"], vacated(outcome="no-node")) == (0, "no-node\n", "")
    plan = '{"m.example": {"channel": null, "roll": [], "current": {}, "steps": []}}'
    assert run(monkeypatch, capsys, ["upgrade-plan", "m.example"], plan) == (0, "roll 0 -\n", "")
    required = '{"a.example": {"required": true}, "b.example": {"required": false}}'
    assert run(monkeypatch, capsys, ["reboot-plan", "a.example", "b.example"], required) == (0, "needs a.example\n", "")


def test_local_states_prints_the_counts_then_each_failing_state_and_exits_1_on_a_failure(monkeypatch, capsys):
    def applied(*results):
        return json.dumps(
            {
                "local": {
                    f"file_|-s{index}_|-/x_|-managed": {"result": result, "changes": {}, "comment": "bad\nmore"}
                    for index, result in enumerate(results)
                }
            }
        )

    assert run(monkeypatch, capsys, ["local-states"], applied(True, True)) == (0, "2 0\n\n", "")
    assert run(monkeypatch, capsys, ["local-states"], applied(True, False)) == (1, "2 0\ns1 (bad)\n", "")


def test_orchestration_reads_the_file_it_is_given_and_exits_with_the_summarys_status(monkeypatch, capsys, tmp_path):
    succeeded = str(FIXTURES / "orchestrate-succeeded.out")
    status, out, _ = run(monkeypatch, capsys, ["orchestration", "orch.x", "12", succeeded])
    assert (status, out) == (0, "orchestration orch.x succeeded in 12 s: 2 steps, 2 states changed on 2 minions\n")
    status, out, _ = run(
        monkeypatch, capsys, ["orchestration", "orch.x", "12", str(FIXTURES / "orchestrate-failed.out")]
    )
    assert status == 1
    assert out.startswith("orchestration orch.x failed: ")
    (tmp_path / "empty.json").write_text("Salt request timed out.\n")
    assert run(monkeypatch, capsys, ["orchestration", "orch.x", "1", str(tmp_path / "empty.json")]) == (
        3,
        "orchestration orch.x failed: salt-run printed no result\n",
        "",
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["key-status", "a.example"], "salt-key printed no JSON\n"),
        (["local-states"], "salt-call printed no state results: Salt request timed out.\n"),
    ],
)
def test_output_with_nothing_to_read_exits_3_saying_so(monkeypatch, capsys, argv, message):
    assert run(monkeypatch, capsys, argv, "Salt request timed out.\n") == (3, "", message)


def test_the_secrets_of_a_cloud_pillar_as_terraform_writes_it_and_as_a_person_would():
    # Terraform's yamlencode quotes every key and string (constructs/provisioning/pillar.ts).
    written = (
        '#!yaml\n"openstack":\n  "cloud":\n    "application_credential_id": "0123456789abcdef"\n'
        '    "application_credential_secret": "not;a#real\\"secret\\\\"\n    "region": "RegionOne"\n'
    )
    assert salt_output.secrets_of(written) == ['not;a#real"secret\\']
    assert salt_output.secrets_of("root_password: hunter22\nsecret: abc\n") == ["hunter22"]


def preview_of(minion_return) -> str:
    return json.dumps({"m.example": minion_return})


def test_a_preview_names_a_candidate_that_fails_to_render_and_a_failing_state(monkeypatch, capsys, tmp_path):
    report = tmp_path / "report.json"
    errors = ["Rendering SLS 'koo-preview:core' failed: Jinja variable 'dict object' has no attribute 'x'"]
    status, out, _ = run(monkeypatch, capsys, ["preview", "-", str(report), "m.example"], preview_of(errors))
    assert (status, out) == (1, f"m.example: fails: {errors[0]}\n")
    assert json.loads(report.read_text()) == {"hosts": {"m.example": {"status": "failed", "errors": errors}}}
    failing = {
        "file_|-a_|-/etc/a_|-managed": {"result": False, "comment": "Source file salt://x not found", "changes": {}},
        "pkg_|-b_|-vim_|-installed": {"result": True, "comment": "All specified packages are already installed"},
    }
    status, out, _ = run(monkeypatch, capsys, ["preview", "-", str(report), "m.example"], preview_of(failing))
    assert (status, out.splitlines()) == (
        1,
        [
            "m.example: would change 0 of 2 states, 1 failing",
            "  a (file.managed /etc/a): fails: Source file salt://x not found",
        ],
    )


def test_a_preview_shows_the_diff_of_each_file_a_state_manages_under_its_name(monkeypatch, capsys, tmp_path):
    diff = "--- \n+++ \n@@ -1 +1 @@\n-old\n+new\n"
    transferred = {
        "file_transfer_|-t_|-t_|-transferred": {
            "result": None,
            "comment": "1 file would change",
            "changes": {"/etc/a.crt": {"diff": diff}, "/etc/b.crt": {"newfile": "/etc/b.crt"}},
        }
    }
    report = tmp_path / "report.json"
    status, out, _ = run(monkeypatch, capsys, ["preview", "-", str(report), "m.example"], preview_of(transferred))
    assert (status, out.splitlines()) == (
        0,
        [
            "m.example: would change 1 of 1 state",
            "  t (file_transfer.transferred t): would change: 1 file would change",
            "    /etc/a.crt:",
            "      --- ",
            "      +++ ",
            "      @@ -1 +1 @@",
            "      -old",
            "      +new",
            '    /etc/b.crt: {"newfile": "/etc/b.crt"}',
        ],
    )
