"""
Lookups the kube-on-os states need that would otherwise be logic in Jinja.

- ``hosts_file``: /etc/hosts content naming every minion at its private address (from the mine).
- ``interface_in``: the name of the local interface whose IPv4 address lies in a network.
- ``microk8s_channel``: the channel a new node installs when microk8s_channel is unset (the mine).
- ``reboot_required``, ``reboot``: the node's side of the rolling reboot (orch.reboot).
- ``minion_options``: whether salt-minion runs with the options core.minion wrote (orch.deploy).
- ``restart_minion``: restarts salt-minion once the job that asked has returned (core.minion).
- ``file_transfers``: the pillar's ``file_transfer`` files this host takes, checked (file_transfer).
"""

from __future__ import annotations

import fnmatch
import ipaddress
import os
import posixpath
import re

from salt.exceptions import CommandExecutionError

__virtualname__ = "kube_on_os"

# Debian and Ubuntu: a package whose update needs a reboot (a kernel, libc, systemd) creates this
# file and lists itself in reboot-required.pkgs (update-notifier-common's
# /usr/share/update-notifier/notify-reboot-required, called from those packages' postinst). /run
# is a tmpfs, so a boot clears both. The minion option names another file (the tests' nodes).
REBOOT_REQUIRED = "/run/reboot-required"
REBOOT_REQUIRED_OPTION = "kube_on_os.reboot_required"
# Seconds between ``reboot`` returning its answer and the reboot: the minion must answer first.
REBOOT_DELAY = 5
# How ``restart_minion`` restarts salt-minion: Salt's service module, which uses systemctl (and
# --no-block for salt-minion) where systemd runs the machine. The minion option names another
# command (the tests' minions, which no service manager runs).
MINION_RESTART = "salt-call --local service.restart salt-minion"
MINION_RESTART_OPTION = "kube_on_os.minion_restart"
# The pillar's file_transfer files come from this folder of the Salt tree (salt/file_transfer/files/).
FILE_TRANSFER_SOURCES = "file_transfer/files"
FILE_TRANSFER_KEYS = {"source", "hosts", "user", "group", "mode"}
FILE_TRANSFER_MODE = re.compile(r"^[0-7]{3,4}$")


def __virtual__():
    return __virtualname__


def _private_addresses() -> dict[str, list[str]]:
    """Mine data of ``network.ip_addrs``, which the pillar limits to the private network."""
    return __salt__["mine.get"]("*", "network.ip_addrs") or {}


def hosts_file() -> str:
    """
    /etc/hosts text: localhost, then each minion's first private address with its FQDN and short
    name, sorted by minion id so the file only changes when the cluster does.

    CLI Example:

    .. code-block:: bash

        salt '*' kube_on_os.hosts_file
    """
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
    for minion_id, addresses in sorted(_private_addresses().items()):
        if not addresses:
            continue
        short = minion_id.split(".", 1)[0]
        lines.append(f"{addresses[0]} {minion_id} {short}")
    return "\n".join(lines) + "\n"


def interface_in(cidr: str) -> str:
    """
    The local interface whose IPv4 address is in ``cidr``. Raises ``CommandExecutionError`` when
    none is, so a state using it fails instead of guessing an interface.

    CLI Example:

    .. code-block:: bash

        salt bastion.example kube_on_os.interface_in 10.0.0.0/16
    """
    try:
        network = ipaddress.ip_network(cidr)
    except (TypeError, ValueError):
        # The bastion's map has no default network: an unset pillar arrives here as None.
        raise CommandExecutionError(f"interface_in needs a network in CIDR notation, got {cidr!r}") from None
    for name, addresses in sorted((__grains__.get("ip4_interfaces") or {}).items()):
        if any(ipaddress.ip_address(address) in network for address in addresses):
            return name
    raise CommandExecutionError(f"no interface has an address in {cidr}")


def microk8s_channel(master: str, new_cluster: str) -> str:
    """
    The channel a node installs microk8s from when microk8s_channel is unset: the one the
    cluster's nodes track, from the mine's ``microk8s.installed`` (pillar/roles/kubernetes.sls),
    the Kubernetes ``master``'s first (a roll starts with it), else the newest any node tracks;
    ``new_cluster`` where no node has microk8s yet (a first deployment). A node's entry is its
    snap's ``{"version", "tracking"}``; one without the snap has none (the module loads with it).
    """
    reports = __salt__["mine.get"]("k8s-*", "microk8s.installed")
    tracked = {
        minion: report["tracking"]
        for minion, report in (reports or {}).items()
        if isinstance(report, dict) and isinstance(report.get("tracking"), str)
    }
    if master in tracked:
        return tracked[master]

    # Not microk8s._upgrade.channel_minor: that module loads only where the snap is, and this
    # runs on nodes without it; an unparsable channel sorts last instead of raising.
    def minor(channel: str) -> int:
        track = channel.split("/")[0]
        return int(track.split(".")[1]) if track.startswith("1.") and track[2:].isdigit() else -1

    return max(tracked.values(), key=minor, default=new_cluster)


def reboot_required() -> dict:
    """
    Whether this machine's package updates need a reboot: ``{"required": bool, "packages": [names]}``
    (packages as reboot-required.pkgs lists them, once each).

    CLI Example: ``salt '*' kube_on_os.reboot_required``
    """
    path = __salt__["config.get"](REBOOT_REQUIRED_OPTION) or REBOOT_REQUIRED
    if not os.path.exists(path):
        return {"required": False, "packages": []}
    try:
        with open(f"{path}.pkgs") as listed:
            packages = list(dict.fromkeys(line.strip() for line in listed if line.strip()))
    except FileNotFoundError:
        packages = []
    return {"required": True, "packages": packages}


def _after_this_job(command: str) -> None:
    """
    Runs the shell line ``command`` in the background once the job calling this has returned.

    A job runs in a process of its own, forked from the minion (``multiprocessing``, Salt's
    default). It hands its return to the minion's main process, which sends it to the master, and
    ends only after that (salt/minion.py: ``_return_pub``, ``_send_req_sync``, and the main
    process's ``__master_req_channel_payload`` handler). A minion stopped before then loses the
    return, and the master reports the minion as not returning: a fixed delay did that on a loaded
    machine. So the line waits for the job's process to be gone (or a zombie) first. Salt 3007.15's
    main process never answers the job (``SaltEvent.fire_event_async`` does not await its publish),
    so each job process lingers about 30 s after its return and logs "The minion failed to return
    the job information": the line runs that much later.
    """
    if not __opts__.get("multiprocessing", True):
        raise CommandExecutionError("a job runs in the minion's own process (multiprocessing: False): it never ends")
    job = os.getpid()
    waiting = f"while grep -qs '^State:[[:space:]]*[^Z[:space:]]' /proc/{job}/status; do sleep 1; done"
    __salt__["cmd.run_bg"](f"{waiting}; {command}", python_shell=True)


def reboot(delay: int = REBOOT_DELAY) -> dict:
    """
    Reboots this machine ``delay`` seconds from now (``systemctl reboot`` in the background), so
    that this call returns to the orchestration before the minion goes down; Salt's
    system.reboot reboots at once, and its caller may never hear back. ``{"in": delay}``. (A
    fixed delay, unlike restart_minion's wait: waiting for the job's process would add Salt
    3007.15's 30 s to every node of a roll; a lost return here fails the roll, which the next
    apply takes up again.)
    """
    seconds = int(delay)
    if seconds < 1:
        raise CommandExecutionError(f"reboot needs a delay of 1 s or more, got {delay!r}")
    __salt__["cmd.run_bg"](f"sleep {seconds} && systemctl reboot", python_shell=True)
    return {"in": seconds}


def restart_minion() -> dict:
    """
    Restarts salt-minion once this call has returned (Salt's FAQ, "restart the Salt minion using
    Salt", in the background), so that the minion reads its configuration again.
    ``{"command": the command that restarts it}``.

    CLI Example: ``salt '*' kube_on_os.restart_minion``
    """
    command = __salt__["config.get"](MINION_RESTART_OPTION) or MINION_RESTART
    _after_this_job(command)
    return {"command": command}


def minion_options(expected: dict) -> dict:
    """
    Whether this salt-minion runs with ``expected`` (the options of core/files/minion.conf, which
    core.minion writes and then restarts the minion for): ``{"options": expected}`` when it does;
    raises, naming every option that differs, while the minion still runs with the options it
    started with. A job runs in a process forked from the minion, so ``__opts__`` holds the
    options the running minion read when it started, not the file's.

    CLI Example: ``salt '*' kube_on_os.minion_options '{"zmq_monitor": false}'``
    """
    if not isinstance(expected, dict) or not expected:
        raise CommandExecutionError(f"minion_options needs a mapping of options, got {expected!r}")
    differ = [
        f"{name} {__opts__.get(name)!r} (core.minion wrote {value!r})"
        for name, value in sorted(expected.items())
        if __opts__.get(name) != value
    ]
    if differ:
        raise CommandExecutionError(
            f"salt-minion runs with {', '.join(differ)}: it has not restarted since core.minion wrote them"
        )
    return {"options": expected}


def file_transfers(files: dict | None) -> list[dict]:
    """
    The files of the ``file_transfer`` pillar that this host takes, each checked: ``name`` (the
    target, an absolute path), ``source`` (``salt://file_transfer/files/...``), ``user``,
    ``group`` and ``mode``, sorted by target. A host takes a file when its host name (the minion
    id before the first dot) matches one of the file's ``hosts`` globs. A value that breaks a rule
    raises ``CommandExecutionError`` naming its pillar key, whichever host it is meant for.

    CLI Example:

    .. code-block:: bash

        salt '*' kube_on_os.file_transfers "$(salt-call --out=json pillar.get file_transfer)"
    """
    if files is None:
        return []
    if not isinstance(files, dict):
        raise CommandExecutionError("file_transfer: must map each target path to its file (source, hosts, ...)")
    host = __grains__["id"].partition(".")[0]
    wanted = []
    for target, spec in sorted(files.items(), key=lambda item: str(item[0])):
        key = f"file_transfer:{target}"
        if not (isinstance(target, str) and target.startswith("/") and posixpath.normpath(target) == target):
            raise CommandExecutionError(f"{key}: the target must be an absolute path with no '.', '..' or trailing '/'")
        if target == "/":
            raise CommandExecutionError(f"{key}: the target must be a file, not /")
        if not isinstance(spec, dict):
            raise CommandExecutionError(f"{key}: must be a mapping with source and hosts")
        unknown = sorted(set(spec) - FILE_TRANSFER_KEYS)
        if unknown:
            expected = ", ".join(sorted(FILE_TRANSFER_KEYS))
            raise CommandExecutionError(f"{key}: unknown key {unknown[0]} (expected {expected})")
        source = spec.get("source")
        if not (
            isinstance(source, str)
            and source
            and not source.startswith("/")
            and posixpath.normpath(source) == source
            and not source.startswith("..")
        ):
            raise CommandExecutionError(
                f"{key}:source: must be a file's path under salt/{FILE_TRANSFER_SOURCES}/, relative and with no '..'"
            )
        hosts = spec.get("hosts")
        if not (isinstance(hosts, list) and hosts and all(isinstance(glob, str) and glob for glob in hosts)):
            raise CommandExecutionError(
                f"{key}:hosts: must list the host names (globs, e.g. [k8s-*]) that take the file"
            )
        mode = spec.get("mode", "0644")
        if not (isinstance(mode, str) and FILE_TRANSFER_MODE.match(mode)):
            raise CommandExecutionError(f"{key}:mode: must be an octal mode in quotes, e.g. '0644'")
        owners = {owner: spec.get(owner, "root") for owner in ("user", "group")}
        for owner, name in owners.items():
            if not (isinstance(name, str) and name):
                raise CommandExecutionError(f"{key}:{owner}: must be a name, e.g. root")
        if any(fnmatch.fnmatchcase(host, glob) for glob in hosts):
            wanted.append(
                {"name": target, "source": f"salt://{FILE_TRANSFER_SOURCES}/{source}", **owners, "mode": mode}
            )
    return wanted
