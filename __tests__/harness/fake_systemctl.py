#!/usr/bin/env python3
"""
``systemctl reboot`` and ``systemctl restart salt-minion`` on a fake node of the real-Salt harness
(harness.salt_cluster.SaltCluster), first on its minion's PATH.

``restart salt-minion`` is what systemd does with the Salt Project's salt-minion.service
(KillMode=process): SIGTERM to the service's main process alone, the salt-minion that was started
(the leader of the group of the process its pidfile names; it passes the signal on to the minion it
keeps alive: salt/scripts.py), SIGKILL to both if they are still there after 30 s, then the
minion starts again ($FAKE_MINION_COMMAND). The caller waits, as ``systemctl restart`` without
--no-block does; a process the minion started is not killed, as KillMode=process leaves it.

``reboot`` is what a reboot does to what the tests can see, on this machine, which is never
rebooted. It returns at once, as systemctl does once systemd has the job; then, apart from its
caller (its own session, since the minion that ran it goes down):

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


def stat_fields(pid: int | str) -> list[str]:
    """/proc/PID/stat after the name: state ppid pgrp ...; [] for a process that is gone."""
    with contextlib.suppress(OSError, IndexError):
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ")".
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return []


def running(pid: int | str) -> bool:
    """Whether ``pid`` is a live process: not gone, and not a zombie its parent has yet to reap."""
    fields = stat_fields(pid)
    return bool(fields) and fields[0] != "Z"


def members(group: int) -> list[int]:
    """The live (not zombie) processes of process group ``group``."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        fields = stat_fields(proc.name)
        if fields and fields[2] == str(group) and fields[0] != "Z":
            found.append(int(proc.name))
    return found


def power_off(pidfile: Path) -> bool:
    """
    The machine of the minion ``pidfile`` names goes down: the minion's whole process group is
    killed, and the files a real machine keeps on its /run tmpfs go. Whether the group ended within
    10 s.
    """
    # The pidfile names one of the minion's processes; the group is the whole minion.
    group = os.getpgid(int(pidfile.read_text().strip()))
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    for _ in range(100):
        if not members(group):
            break
        time.sleep(0.1)
    # /run is a tmpfs, where the minion's pidfile and its process_responsibility_ file are on a
    # real machine (the latter keeps a second minion from starting: salt/utils/parsers.py).
    responsibility = pidfile.with_name(f"process_responsibility_{pidfile.name}")
    for path in (pidfile, responsibility):
        path.unlink(missing_ok=True)
    return not members(group)


def power_cycle() -> None:
    time.sleep(0.5)
    power_off(Path(os.environ["FAKE_MINION_PIDFILE"]))
    required = Path(os.environ["FAKE_REBOOT_REQUIRED"])
    for path in (required, required.with_name(f"{required.name}.pkgs")):
        path.unlink(missing_ok=True)
    if (Path(os.environ["FAKE_MICROK8S_DIR"]) / "fake" / "no-boot").exists():
        subprocess.run(["microk8s", "stop"], check=False, capture_output=True)
        return
    subprocess.run(["microk8s", "fake-boot"], check=True, capture_output=True)
    start_minion()


def start_minion() -> None:
    log = Path(os.environ["FAKE_MINION_PIDFILE"]).with_name("salt-minion.out").open("a")
    command = json.loads(os.environ["FAKE_MINION_COMMAND"])
    subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def restart_minion() -> None:
    pid = int(Path(os.environ["FAKE_MINION_PIDFILE"]).read_text().strip())
    main = os.getpgid(pid)

    # systemd reaps the main process; the minion it kept alive must be gone from /proc, since a new
    # minion takes its zombie for a live instance and exits (psutil, in salt/utils/process.py
    # claim_mantle_of_responsibility). A zombie main process is the harness's, which never reaps.
    def stopped() -> bool:
        return not running(main) and not Path(f"/proc/{pid}").exists()

    with contextlib.suppress(ProcessLookupError):
        os.kill(main, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while not stopped() and time.monotonic() < deadline:
        time.sleep(0.1)
    for process in (main, pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process, signal.SIGKILL)
    while not stopped():
        time.sleep(0.1)
    start_minion()


def main(argv: list[str]) -> int:
    if argv[1:] == ["--version"]:
        # Salt's core grains ask at every module load (salt/grains/core.py _systemd).
        print("systemd 252 (252.31-1~deb12u1)\n+PAM +AUDIT +SELINUX")
        return 0
    if [arg for arg in argv[1:] if arg != "--no-block"] in (
        ["restart", "salt-minion"],
        ["restart", "salt-minion.service"],
    ):
        restart_minion()
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
