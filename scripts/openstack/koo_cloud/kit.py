"""The kit's state on disk, its ports, and the processes it starts.

Everything one cloud owns lives under its state directory:

    etc/<service>/     configuration files
    data/<service>/    databases, images, keys
    log/<name>.log     each process's output
    run/<name>.pid     "<pid> <start time>" of each process the kit started

`down` ends only the processes named by run/*.pid, and only while the PID still belongs to the
process the kit started (its start time, /proc/<pid>/stat field 22, is unchanged), so a PID the
system reused is never signalled.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
KIT_DIR = HERE.parent
PLUGINS = KIT_DIR / "plugins"

# Each service's offset from the port base. The base defaults below Linux's ephemeral range
# (32768-60999), so a test server listening on port 0 never takes one of these.
PORTS = {
    "keystone": 0,
    "glance": 1,
    "placement": 2,
    "nova": 3,
    "neutron": 4,
    "cinder": 5,
    "octavia": 6,
    "mariadb": 10,
    "rabbitmq": 11,
    "epmd": 12,
    "rabbitmq-dist": 13,
}
DEFAULT_PORT_BASE = 23300

# The password of every account the kit creates (database, service users, the admin). The cloud
# listens on 127.0.0.1 only and holds nothing but test data.
PASSWORD = "koo-cloud-secret"
REGION = "RegionOne"


class KitError(Exception):
    """One line for the user: what failed and where to look."""


@dataclass
class Kit:
    state: Path
    venv: Path
    port_base: int = DEFAULT_PORT_BASE
    verbose: bool = True
    started: float = field(default_factory=time.monotonic)

    # --- places -------------------------------------------------------------------------------
    def port(self, name: str) -> int:
        return self.port_base + PORTS[name]

    def url(self, service: str, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port(service)}{path}"

    @property
    def auth_url(self) -> str:
        return self.url("keystone", "/v3")

    def etc(self, service: str) -> Path:
        path = self.state / "etc" / service
        path.mkdir(parents=True, exist_ok=True)
        return path

    def data(self, service: str) -> Path:
        path = self.state / "data" / service
        path.mkdir(parents=True, exist_ok=True)
        return path

    def log_path(self, name: str) -> Path:
        path = self.state / "log"
        path.mkdir(parents=True, exist_ok=True)
        return path / f"{name}.log"

    @property
    def tmp(self) -> Path:
        """For the servers' own PID files and sockets: not ours to signal, not in a snapshot."""
        path = self.state / "tmp"
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def run_dir(self) -> Path:
        path = self.state / "run"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def policy(self, service: str) -> dict[str, object]:
        """The [oslo_policy] options of a service: its policy in code, overridden by nothing.

        oslo.policy looks for policy.yaml and policy.d/ at every check (oslo_policy/policy.py,
        Enforcer.load_rules) and, while it finds none, searches every configuration directory
        again (oslo_config/cfg.py, find_file): a tenth of Neutron's API time went to those
        lookups. An empty file and directory named by absolute paths are found at once, with one
        stat each, and leave the same rules as none.
        """
        etc = self.etc(service)
        (etc / "policy.yaml").write_text("{}\n")
        (etc / "policy.d").mkdir(exist_ok=True)
        return {"policy_file": etc / "policy.yaml", "policy_dirs": etc / "policy.d"}

    def database_url(self, name: str) -> str:
        return f"mysql+pymysql://koo:{PASSWORD}@127.0.0.1:{self.port('mariadb')}/{name}?charset=utf8mb4"

    @property
    def transport_url(self) -> str:
        return f"rabbit://guest:guest@127.0.0.1:{self.port('rabbitmq')}/"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment every service process gets: the venv first on PATH, our plugins importable."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env["PATH"] = f"{self.venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
        env["PYTHONPATH"] = f"{PLUGINS}:{KIT_DIR}"
        env["VIRTUAL_ENV"] = str(self.venv)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(extra or {})
        return env

    def say(self, message: str) -> None:
        if self.verbose:
            print(f"==> cloud: {message} ({time.monotonic() - self.started:.0f} s)", file=sys.stderr, flush=True)

    # --- commands -----------------------------------------------------------------------------
    def run(self, name: str, argv: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> str:
        """Runs a one-off command (a migration, a bootstrap); its output goes to log/<name>.log."""
        log = self.log_path(name)
        with log.open("ab") as out:
            out.write(f"$ {' '.join(argv)}\n".encode())
            out.flush()
            done = subprocess.run(
                argv, stdout=out, stderr=subprocess.STDOUT, env=self.env(env), timeout=timeout, check=False
            )
        if done.returncode != 0:
            raise KitError(f"{name} failed with status {done.returncode}: {tail(log)}")
        return log.read_text(errors="replace")

    # --- processes ----------------------------------------------------------------------------
    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> int:
        """Starts a long-running process in a session of its own, and records its PID file."""
        log = self.log_path(name)
        with log.open("ab") as out:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env(env),
                cwd=cwd,
                start_new_session=True,
            )
        (self.run_dir / f"{name}.pid").write_text(f"{process.pid} {start_time(process.pid)}\n")
        return process.pid

    def alive(self, name: str) -> bool:
        return recorded_pid(self.run_dir / f"{name}.pid") is not None

    def stop_all(self, grace: float = 15.0) -> list[str]:
        """Ends every process the kit recorded (its whole session), newest first; returns their names."""
        pid_files = sorted(self.run_dir.glob("*.pid"), key=lambda p: p.stat().st_mtime, reverse=True)
        live = []
        for pid_file in pid_files:
            pid = recorded_pid(pid_file)
            if pid is None:
                pid_file.unlink(missing_ok=True)
                continue
            live.append((pid_file, pid))
            signal_session(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for pid_file, pid in live:
            # The session's other processes (gunicorn's worker, Erlang's helpers) end too.
            while (recorded_pid(pid_file) is not None or session_members(pid)) and time.monotonic() < deadline:
                time.sleep(0.1)
            if recorded_pid(pid_file) is not None or session_members(pid):
                signal_session(pid, signal.SIGKILL)
                for member in session_members(pid):
                    signal_session(member, signal.SIGKILL)
            pid_file.unlink(missing_ok=True)
        return [p.stem for p, _ in live]

    def wait_for(self, what: str, check, timeout: float = 120.0, process: str | None = None) -> None:
        """Polls `check()` until it is true; fails early when `process` has exited."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return
            if process is not None and not self.alive(process):
                raise KitError(f"{process} exited while waiting for {what}: {tail(self.log_path(process))}")
            time.sleep(0.25)
        log = f": {tail(self.log_path(process))}" if process else ""
        raise KitError(f"{what} not ready after {timeout:.0f} s{log}")

    def wait_http(self, service: str, process: str, path: str = "/", timeout: float = 120.0) -> None:
        self.wait_for(
            f"{service}'s API on port {self.port(service)}",
            lambda: http_answers(self.url(service, path)),
            timeout,
            process,
        )


def start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot; '' when it has gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    return stat.rsplit(")", 1)[1].split()[19]


def recorded_pid(pid_file: Path) -> int | None:
    """The PID a PID file names, if that very process still runs (and is not a zombie)."""
    try:
        pid_text, started = pid_file.read_text().split()
    except (OSError, ValueError):
        return None
    pid = int(pid_text)
    if start_time(pid) != started:
        return None
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None
    return None if state == "Z" else pid


def session_members(sid: int) -> list[int]:
    """The live processes of session `sid` (/proc/<pid>/stat field 6)."""
    members = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            members.append(int(proc.name))
    return members


def signal_session(pid: int, signum: int) -> None:
    """Signals the process's whole session (it leads one: start_new_session), then the process."""
    for target in (lambda: os.killpg(pid, signum), lambda: os.kill(pid, signum)):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass


def tail(log: Path, lines: int = 15) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {log})"
    return f"the end of {log}:\n" + "\n".join(text[-lines:])


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def http_answers(url: str) -> bool:
    """True once anything answers HTTP at `url` (any status: an API may want a token)."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def write_ini(path: Path, sections: dict[str, dict[str, object]]) -> None:
    """Writes an oslo.config (INI) file; lists become comma-separated values, booleans true/false."""
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        for key, value in options.items():
            if isinstance(value, bool):
                value = str(value).lower()
            elif isinstance(value, (list, tuple)):
                value = ",".join(str(v) for v in value)
            lines.append(f"{key} = {value}")
        lines.append("")
    path.write_text("\n".join(lines))


def write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n")
