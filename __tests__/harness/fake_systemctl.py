#!/usr/bin/env python3
"""
``systemctl reboot`` on a fake node of the real-Salt harness (harness.salt_cluster.SaltCluster),
first on its minion's PATH: what a reboot does to what the tests can see, on this machine,
which is never rebooted. It returns at once, as systemctl does once systemd has the job; then,
apart from its caller (its own session, since the minion that ran it goes down):

- the machine goes down: the minion's whole process group is killed, as a power-off ends every
  process (the group of the process the minion's pidfile names, $FAKE_MINION_PIDFILE);
- /run is a tmpfs: $FAKE_REBOOT_REQUIRED and its .pkgs are gone;
- the machine boots: ``microk8s fake-boot`` (a new boot id, the snap's services starting) and the
  minion starts again ($FAKE_MINION_COMMAND, a JSON list) with the environment it had, firing
  its start event.

A node whose $FAKE_MICROK8S_DIR has a file ``fake/no-boot`` goes down and stays down (its
microk8s stopped, its minion not started): a machine that does not come back.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def members(group: int) -> list[int]:
    """The live (not zombie) processes of process group ``group``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ")".
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group and fields[0] != "Z":
                found.append(int(stat.parent.name))
    return found


def power_cycle() -> None:
    pidfile = Path(os.environ["FAKE_MINION_PIDFILE"])
    # The pidfile names one of the minion's processes; the group is the whole minion.
    group = os.getpgid(int(pidfile.read_text().strip()))
    time.sleep(0.5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    for _ in range(100):
        if not members(group):
            break
        time.sleep(0.1)
    required = Path(os.environ["FAKE_REBOOT_REQUIRED"])
    # /run is a tmpfs, where the minion's pidfile and its process_responsibility_ file are on a
    # real machine (the latter keeps a second minion from starting: salt/utils/parsers.py).
    responsibility = pidfile.with_name(f"process_responsibility_{pidfile.name}")
    for path in (required, required.with_name(f"{required.name}.pkgs"), pidfile, responsibility):
        path.unlink(missing_ok=True)
    if (Path(os.environ["FAKE_MICROK8S_DIR"]) / "fake" / "no-boot").exists():
        subprocess.run(["microk8s", "stop"], check=False, capture_output=True)
        return
    subprocess.run(["microk8s", "fake-boot"], check=True, capture_output=True)
    log = pidfile.with_name("salt-minion.out").open("a")
    command = json.loads(os.environ["FAKE_MINION_COMMAND"])
    subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def main(argv: list[str]) -> int:
    if argv[1:] == ["--version"]:
        # Salt's core grains ask at every module load (salt/grains/core.py _systemd).
        print("systemd 252 (252.31-1~deb12u1)\n+PAM +AUDIT +SELINUX")
        return 0
    if argv[1:] != ["reboot"]:
        print(f"fake systemctl: unsupported {argv[1:]}", file=sys.stderr)
        return 2
    if os.fork():
        return 0
    os.setsid()
    if os.fork():
        os._exit(0)
    for fd in (0, 1, 2):
        os.dup2(os.open(os.devnull, os.O_RDWR), fd)
    power_cycle()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
