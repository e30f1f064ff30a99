#!/usr/bin/env python3
"""
Runs the Salt processes that a provisioner script watches rather than waits for, and stops them:
at the end of what it watches, when the script that started it is gone, or on a signal.

It runs on the host's system python3 (3.12 on Ubuntu 24.04; 3.8 on an older 20.04 image) with the
standard library only, and leaves reading Salt's output to salt_output.py. A bad command line
exits 2.

  events --ready-tag TAG --done-tag TAG --ready-file FILE -- COMMAND...
                        Runs COMMAND (salt-run state.event pretty=False tagmatch=...) and prints
                        one line per minion job return until it sees the done tag, its parent
                        exits, or it is terminated. Touches FILE on seeing the ready tag.
"""

from __future__ import annotations

import argparse
import os
import select
import signal
import subprocess
import sys
from typing import Callable

# The scripts run as root from the deploy user's ~/.kube-on-os/bin, which the next apply deletes
# as that user: a root-owned __pycache__ left there by the import below would make that fail.
sys.dont_write_bytecode = True
import salt_output  # noqa: E402  (after the line above; beside this file, so on sys.path)


def supervise(command: list[str], on_line: Callable[[str], bool]) -> int:
    """
    Runs ``command`` in a session of its own and hands each line it prints to ``on_line``, until
    that returns True, the command's output ends, this process's parent exits, or SIGTERM, SIGINT
    or SIGHUP; then stops the command's whole session (``stop``). Exits 0 in every case.
    """
    parent = os.getppid()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)

    def terminate(signum, frame):
        raise SystemExit(0)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, terminate)
    buffer = b""
    try:
        assert process.stdout is not None
        descriptor = process.stdout.fileno()
        while True:
            # A reader orphaned by a killed script must not outlive it.
            if os.getppid() != parent:
                return 0
            readable, _, _ = select.select([descriptor], [], [], 1.0)
            if not readable:
                continue
            chunk = os.read(descriptor, 65536)
            if not chunk:
                return 0
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                if on_line(raw.decode("utf-8", "replace")):
                    return 0
    finally:
        stop(process)


def stop(process: subprocess.Popen) -> None:
    for signum, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def events(ready_tag: str, done_tag: str, ready_file: str, command: list[str]) -> int:
    """``supervise`` over state.event: the tags of this run mark when it listens and when it is done."""

    def on_line(line: str) -> bool:
        tag, job_return = salt_output.state_event(line)
        if tag == ready_tag:
            with open(ready_file, "w"):
                pass
        elif tag == done_tag:
            return True
        elif job_return:
            print(job_return, flush=True)
        return False

    return supervise(command, on_line)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="supervise.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    subcommands = root.add_subparsers(dest="subcommand", metavar="SUBCOMMAND", required=True)
    watch = subcommands.add_parser("events", allow_abbrev=False)
    watch.add_argument("--ready-tag", required=True, metavar="TAG")
    watch.add_argument("--done-tag", required=True, metavar="TAG")
    watch.add_argument("--ready-file", required=True, metavar="FILE")
    watch.add_argument("command", nargs="+", metavar="COMMAND")
    return root


def main(argv: list[str]) -> int:
    arguments = parser().parse_args(argv)
    return events(arguments.ready_tag, arguments.done_tag, arguments.ready_file, arguments.command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
