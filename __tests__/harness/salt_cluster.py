"""
A real Salt master with real minions, all on 127.0.0.1, each minion confined to a temporary
directory and driving its own fake microk8s node (FakeMicrok8s). The master runs the project's
salt_master/files/master.conf (with its reactor), serving salt/ behind an overlay of test SLS
and a copy of pillar/ with a _from_terraform.sls of the test's own.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import yaml

from harness import salt_commands
from harness.fake_systemctl import power_off
from harness.microk8s_node import FakeMicrok8s
from harness.ports import free_port
from harness.salt_minion import MINION_OPTIONS, ROOT, VENV_BIN

# Each fake node's `systemctl reboot`: the node goes down and boots again (its minion too).
FAKE_SYSTEMCTL = Path(__file__).with_name("fake_systemctl.py")

# What the join protocol's tests put in front of salt/ (test_join_protocol.py,
# test_control_plane_recovery.py): microk8s/init.sls and install.sls would install the snap
# (joiners include only the latter), core/hosts.sls would write this machine's /etc/hosts; the
# overlay writes the same kube_on_os.hosts_file into the fake node's stand-in for it, which the
# fake's agent reads when it checks a joiner's name. The master's certificate and addons are not
# part of the protocol: only the install remains. core/minion.sls would write this machine's
# /etc/salt/minion.d and restart its salt-minion service: these minions start with its options
# instead (SaltCluster.start), which orch.deploy checks.
PROTOCOL_OVERLAY = {
    "core/minion.sls": "core-minion-test-succeed_without_changes:\n  test.succeed_without_changes: []\n",
    "microk8s/init.sls": "include:\n  - microk8s.install\n",
    "microk8s/install.sls": "microk8s-test-installed:\n  test.succeed_without_changes: []\n",
    "core/hosts.sls": (
        "core-hosts-file-managed:\n"
        "  file.managed:\n"
        '    - name: {{ salt["config.get"]("microk8s.snap_data") }}/etc-hosts\n'
        "    - makedirs: true\n"
        '    - contents: {{ salt["kube_on_os.hosts_file"]() | json }}\n'
    ),
}


def from_terraform_sls(pillar: dict) -> str:
    """
    A test's pillar as _from_terraform.sls the way Terraform writes it
    (constructs/provisioning/pillar.ts): the data-only renderer line, so Salt reads it as YAML and
    never as Jinja, then the values in a YAML that Salt's loader reads back unchanged. The L4
    render tests hold Terraform's first line to this one.
    """
    return f"#!yaml\n{yaml.safe_dump(pillar, allow_unicode=True)}"


def _daemon_paths(root: Path, name: str) -> dict:
    return {
        "root_dir": str(root),
        "pki_dir": str(root / "pki"),
        "cachedir": str(root / "cache"),
        "sock_dir": str(root / "sock"),
        "pidfile": str(root / f"{name}.pid"),
        "log_file": str(root / f"{name}.log"),
        "log_level_logfile": "info",
        "user": getpass.getuser(),
        # Grains are this machine's, the same for every daemon and test: kept for 5 minutes
        # (grains_cache_expiration) instead of computed again at each module refresh and salt-run
        # (a third of a second each, hundreds a run). The project's states read only grains["id"].
        "grains_cache": True,
    }


class MasterBusy(AssertionError):
    """
    The master did not answer the salt CLI: its request server timed out ("Salt request timed
    out"), or its publisher does not listen yet, as while it starts ("could not be contacted").
    """


# What the salt CLI says when the master did not answer (client/__init__.py).
_NO_ANSWER = ("Salt request timed out", "The salt master could not be contacted")


class SaltCluster:
    """``nodes``: minion id → (address, hostname) of its fake microk8s node."""

    def __init__(self, root: Path, nodes: dict[str, tuple[str, str]], pillar: dict, overlay: dict[str, str]):
        self.root = root
        self.ports = {"publish_port": free_port(), "ret_port": free_port()}
        self.overlay = root / "overlay"
        for relative, text in overlay.items():
            (self.overlay / relative).parent.mkdir(parents=True, exist_ok=True)
            (self.overlay / relative).write_text(text)
        self.pillar_root = root / "pillar"
        shutil.copytree(ROOT / "pillar", self.pillar_root)
        (self.pillar_root / "_from_terraform.sls").write_text(from_terraform_sls(pillar))
        self.fakes = {
            minion_id: FakeMicrok8s(root / minion_id, root / "fake-cluster", address, hostname)
            for minion_id, (address, hostname) in nodes.items()
        }
        self.processes: list[subprocess.Popen] = []
        # Each minion's environment, for a replaced machine's minion (replace_machine).
        self.minion_env: dict[str, dict] = {}
        self.master_dir = root / "master"
        # The daemons name their directories through a short link to `root`: ZeroMQ's Unix sockets
        # (sock_dir) take paths of at most 107 bytes, which a minion's event socket under a test's
        # temporary directory passed under pytest-xdist (its jobs could not return).
        self.link = Path(tempfile.mkdtemp(prefix="koo-salt-")) / "root"
        self.link.symlink_to(root)

    def _write(self, directory: Path, name: str, config: dict) -> Path:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(yaml.safe_dump(config))
        return directory

    def reboot_required(self, minion_id: str) -> Path:
        """The node's stand-in for /run/reboot-required (the minion option kube_on_os.reboot_required)."""
        return self.root / minion_id / "run" / "reboot-required"

    @property
    def preview_root(self) -> Path:
        """This cluster's /srv/koo-preview: the koo-preview environment's salt/ and pillar/ (master.conf)."""
        return self.root / "koo-preview"

    def master_config(self) -> dict:
        """The project's master.conf, confined to this cluster's directory and ports."""
        master = yaml.safe_load((ROOT / "salt" / "salt_master" / "files" / "master.conf").read_text())
        # Each environment of master.conf's roots, here; a new one must be placed here too.
        assert set(master["file_roots"]) == set(master["pillar_roots"]) == {"base", "koo-preview"}, master
        master.update(
            _daemon_paths(self.link / "master", "master"),
            interface="127.0.0.1",
            file_roots={
                "base": [str(self.overlay), str(ROOT / "salt")],
                "koo-preview": [str(self.preview_root / "salt")],
            },
            pillar_roots={"base": [str(self.pillar_root)], "koo-preview": [str(self.preview_root / "pillar")]},
            worker_threads=3,
            **self.ports,
        )
        return master

    def start(self) -> None:
        master = self.master_config()
        self._write(self.master_dir, "master", master)
        # Salt's roots fileserver makes this directory on the first file list request, with a check
        # then os.makedirs (fileserver/roots.py _file_lists): when every minion syncs at once, a
        # request that loses the race answers an empty list and its minion syncs nothing. On a
        # real master the orchestrate runner lists the states alone first; here it is made now.
        (Path(master["cachedir"]) / "file_lists" / "roots").mkdir(parents=True, exist_ok=True)
        self._spawn("salt-master", self.master_dir, None)
        for minion_id, fake in self.fakes.items():
            directory = self.root / minion_id / "etc"
            config = {
                # What core.minion gives every real minion (core/files/minion.conf).
                **MINION_OPTIONS,
                **_daemon_paths(self.link / minion_id, "minion"),
                "id": minion_id,
                "master": "127.0.0.1",
                "master_port": self.ports["ret_port"],
                "publish_port": self.ports["publish_port"],
                "acceptance_wait_time": 1,
                "random_reauth_delay": 0,
                # The microk8s module reads $SNAP_DATA here; the test pillar's mine reads the address.
                "microk8s.snap_data": str(fake.home),
                "fake_ip_addrs": [fake.address],
                "kube_on_os.reboot_required": str(self.reboot_required(minion_id)),
                # No service manager runs these minions: fake_systemctl.py restarts them as systemd would.
                "kube_on_os.minion_restart": "systemctl restart salt-minion",
            }
            self._write(directory, "minion", config)
            self.reboot_required(minion_id).parent.mkdir(parents=True, exist_ok=True)
            if not (fake.bin / "systemctl").exists():
                (fake.bin / "systemctl").symlink_to(FAKE_SYSTEMCTL)
            env = {
                **fake.env,
                "HOME": str(self.root / minion_id),
                "FAKE_MINION_PIDFILE": config["pidfile"],
                "FAKE_REBOOT_REQUIRED": str(self.reboot_required(minion_id)),
                "FAKE_MINION_COMMAND": json.dumps(self._command("salt-minion", directory)),
            }
            self.minion_env[minion_id] = env
            self._spawn("salt-minion", directory, env)
        self._accept(list(self.fakes))

    def replace_machine(self, minion_id: str) -> None:
        """
        The minion's machine replaced (``terraform apply -replace``): the old one powered off, its
        whole process group killed, and a new machine with the same minion id booted, whose
        minion makes a key of its own (an empty pki_dir) and asks the master at once.
        """
        assert power_off(self.root / minion_id / "minion.pid"), f"the old machine's minion did not end:\n{self.logs()}"
        shutil.rmtree(self.root / minion_id / "pki")
        self._spawn("salt-minion", self.root / minion_id / "etc", self.minion_env[minion_id])

    def restart_master(self) -> None:
        """salt-master stopped (its process group, SIGTERM, then SIGKILL after 10 s) and started again."""
        master = self.processes[0]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(master.pid, signal.SIGTERM)
        try:
            master.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(master.pid, signal.SIGKILL)
            master.wait()
        self._spawn("salt-master", self.master_dir, None)
        self.processes.insert(0, self.processes.pop())

    @staticmethod
    def _command(daemon: str, config_dir: Path) -> list[str]:
        return [str(VENV_BIN / daemon), f"--config-dir={config_dir}", "--log-level=quiet"]

    def _spawn(self, daemon: str, config_dir: Path, env: dict | None) -> None:
        log = (config_dir / f"{daemon}.out").open("w")
        self.processes.append(
            subprocess.Popen(
                self._command(daemon, config_dir),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                # Its own process group: the daemons fork workers that must end with them.
                start_new_session=True,
            )
        )

    def _accept(self, minion_ids: list[str], timeout: float = 240) -> None:
        """
        Accept exactly the expected keys as they arrive, then wait until each minion answers. On a
        2-core machine that runs other suites beside this one, the master took 40 s to answer its
        first minion and the minions 63 s to be ready (CI, stop 49): the deadline is for a master
        or minion that never comes up, not for a slow one.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            keys = json.loads(self._run("salt-key", "--list=pre", "--out=json").stdout or "{}")
            for minion_id in set(keys.get("minions_pre", [])) & set(minion_ids):
                self._run("salt-key", "--yes", f"--accept={minion_id}")
            try:
                pinged = self.salt("*", "test.ping", timeout=5)
            except MasterBusy:
                # A loaded machine's master is still starting, or missed salt's publish timeout: ask
                # again until the deadline.
                pinged = {}
            if all(pinged.get(minion_id) is True for minion_id in minion_ids):
                return
            time.sleep(1)
        raise AssertionError(f"minions did not come up in {timeout} s:\n{self.logs()}")

    def _run(self, command: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        """``command`` (salt, salt-key or salt-run) on this cluster's master (harness.salt_commands)."""
        return salt_commands.run(command, f"--config-dir={self.master_dir}", *args, timeout=timeout)

    def salt(self, target: str, function: str, *args: str, tgt_type: str = "glob", timeout: int = 120) -> dict:
        """``salt TARGET FUNCTION ARGS`` as JSON: ``{minion_id: return}``; tgt_type glob or list."""
        flags = {"glob": [], "list": ["--list"]}[tgt_type]
        # Not --static: Salt 3007 runs that through its batch code, which pings every target first
        # (cli/batch.py gather_minions), a job more on each minion. Without it, each minion's
        # return is a JSON document of its own, and so is each minion's that did not answer
        # (unless --hide-timeout), as with --static.
        result = self._run("salt", f"--timeout={timeout}", "--out=json", *flags, target, function, *args)
        # Without --static, salt writes why the master did not answer as a JSON string on stdout.
        if any(text in result.stdout for text in _NO_ANSWER) and "{" not in result.stdout:
            raise MasterBusy(f"salt {target} {function} failed: {result.stdout}{result.stderr}")
        if result.stderr.strip() and not result.stdout.strip():
            failure = MasterBusy if any(text in result.stderr for text in _NO_ANSWER) else AssertionError
            raise failure(f"salt {target} {function} failed: {result.stderr}")
        # Before any key is accepted, salt says "No minions matched" ahead of its JSON.
        returns: dict = {}
        decoder = json.JSONDecoder()
        position = result.stdout.find("{")
        while position >= 0:
            document, end = decoder.raw_decode(result.stdout, position)
            returns.update(document)
            position = result.stdout.find("{", end)
        return returns

    def state(self, target: str, sls: str, tgt_type: str = "glob") -> dict:
        """``state.sls`` on the target: ``{minion_id: {state_id: return}}``, one id per state."""
        returns = self.salt(target, "state.sls", sls, tgt_type=tgt_type, timeout=300)
        return {
            minion: {key.split("_|-")[1]: value for key, value in states.items()} for minion, states in returns.items()
        }

    def logs(self) -> str:
        return "\n".join(f"== {p}\n{p.read_text()[-3000:]}" for p in self.root.rglob("*.log"))

    def stop(self) -> None:
        """
        SIGTERM to every daemon's process group, SIGKILL to what is left after 10 s; and SIGKILL to
        the minions a fake reboot started again (their pidfiles name them).
        """
        for pidfile in self.root.glob("*/minion.pid"):
            with contextlib.suppress(ProcessLookupError, ValueError, PermissionError, FileNotFoundError):
                pid = int(pidfile.read_text().strip())
                # A minion a reboot left down leaves its pidfile behind: only a live salt-minion is killed.
                if b"salt-minion" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    group = os.getpgid(pid)
                    if group not in {process.pid for process in self.processes}:
                        os.killpg(group, signal.SIGKILL)
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        for process in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(self.link.parent, ignore_errors=True)
