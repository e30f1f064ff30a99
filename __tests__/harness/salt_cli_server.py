"""
The salt, salt-key, salt-run and salt-call commands of the tests' harness (SaltCluster,
LocalMinion), each run in a fork of one process that imported Salt once.

A Salt 3007 CLI spends most of its CPU importing Salt (about 0.8 s of its 1 s for `salt '*'
test.ping`, by cProfile: salt.cli.batch, salt.master, salt.client.ssh, the loader), and the L4
tests run hundreds. This process imports what the CLIs import, then, for each request on stdin (a
JSON line: the command, its arguments, its environment and working directory), forks a child that
runs the command's own entry point (salt.scripts, as the venv's bin/salt does) with its stdout and
stderr in files, and answers on stdout with a JSON line: the exit status and the two outputs. The
parent never runs Salt itself: no ZeroMQ context, event loop or thread exists before a fork, so
each child starts as a new CLI would, with what it imported already in memory. It ends at the end
of its input. harness.salt_commands is its client.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import tempfile

# What the commands import as they run (salt.transport.tcp: the event bus's client, imported when
# a command connects), imported once here.
import salt.cli.batch
import salt.cli.call
import salt.cli.key
import salt.cli.run
import salt.cli.salt
import salt.client
import salt.scripts
import salt.transport.tcp

ENTRY_POINTS = {
    "salt": salt.scripts.salt_main,
    "salt-key": salt.scripts.salt_key,
    "salt-run": salt.scripts.salt_run,
    "salt-call": salt.scripts.salt_call,
}


def run(command: str, args: list[str], env: dict[str, str], cwd: str, timeout: float, bin_dir: str) -> dict:
    """One command in a forked child; ``timed_out`` when it ran past ``timeout`` and was killed."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setpgid(0, 0)
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(env)
                null = os.open(os.devnull, os.O_RDONLY)
                os.dup2(null, 0)
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                sys.argv = [os.path.join(bin_dir, command), *args]
                ENTRY_POINTS[command]()
                code = 0
            except SystemExit as done:
                # As the interpreter ends on sys.exit(): a message goes to stderr, with status 1.
                code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
                if done.code is not None and not isinstance(done.code, int):
                    os.write(2, f"{done.code}\n".encode())
            except BaseException as error:  # the child reports anything as a failed command
                os.write(2, f"{type(error).__name__}: {error}\n".encode())
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        child = os.pidfd_open(pid)
        try:
            timed_out = not select.select([child], [], [], timeout)[0]
        finally:
            os.close(child)
        if timed_out:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        status = os.waitpid(pid, 0)[1]
        out.seek(0)
        err.seek(0)
        return {
            "returncode": os.waitstatus_to_exitcode(status) if not timed_out else None,
            "timed_out": timed_out,
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace"),
        }


def main() -> None:
    bin_dir = os.path.dirname(sys.executable)
    for line in sys.stdin:
        request = json.loads(line)
        answer = run(request["command"], request["args"], request["env"], request["cwd"], request["timeout"], bin_dir)
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
