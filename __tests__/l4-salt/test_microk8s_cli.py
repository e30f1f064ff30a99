"""
The microk8s module's _cli: one argument list with a timeout for every command, errors that name
the command and the line that says why, and the token redacted from every log line and message.
"""

from __future__ import annotations

import importlib

import pytest
from harness.microk8s_node import FakeMicrok8s
from microk8s_support import fake_cli, fixture, ok
from salt.exceptions import CommandExecutionError


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
