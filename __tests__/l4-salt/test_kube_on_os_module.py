"""Unit tests of salt/_modules/kube_on_os.py with Salt's dunders patched, as Salt's own tests do."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from harness.salt_minion import load_module
from salt.exceptions import CommandExecutionError

MODULE_PATH = Path(__file__).resolve().parents[2] / "salt" / "_modules" / "kube_on_os.py"


@pytest.fixture
def kube_on_os():
    module = load_module("kube_on_os", MODULE_PATH)
    return module


def test_hosts_file_names_every_minion_at_its_first_private_address_sorted(kube_on_os):
    mine = {
        "k8s-worker-0.lab.example": ["10.1.0.100"],
        "bastion.lab.example": ["10.1.0.1", "10.1.0.2"],
        "lost.lab.example": [],
    }
    kube_on_os.__salt__ = {
        "mine.get": lambda target, function: mine if (target, function) == ("*", "network.ip_addrs") else {}
    }
    assert kube_on_os.hosts_file() == (
        "127.0.0.1 localhost\n"
        "::1 localhost ip6-localhost ip6-loopback\n"
        "10.1.0.1 bastion.lab.example bastion\n"
        "10.1.0.100 k8s-worker-0.lab.example k8s-worker-0\n"
    )


def test_hosts_file_without_mine_data_keeps_localhost(kube_on_os):
    kube_on_os.__salt__ = {"mine.get": lambda *_: None}
    assert kube_on_os.hosts_file() == "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"


def test_interface_in_finds_the_interface_by_address_not_order(kube_on_os):
    kube_on_os.__grains__ = {"ip4_interfaces": {"ens3": ["10.1.0.1"], "ens4": ["10.0.0.10"], "lo": ["127.0.0.1"]}}
    assert kube_on_os.interface_in("10.0.0.0/16") == "ens4"
    assert kube_on_os.interface_in("10.1.0.0/16") == "ens3"


def test_interface_in_fails_rather_than_guessing(kube_on_os):
    kube_on_os.__grains__ = {"ip4_interfaces": {"lo": ["127.0.0.1"]}}
    with pytest.raises(CommandExecutionError, match=r"no interface has an address in 10\.0\.0\.0/16"):
        kube_on_os.interface_in("10.0.0.0/16")


@pytest.mark.parametrize("cidr", [None, "", "public"])
def test_interface_in_refuses_what_is_not_a_network(kube_on_os, cidr):
    kube_on_os.__grains__ = {"ip4_interfaces": {"lo": ["127.0.0.1"]}}
    with pytest.raises(CommandExecutionError, match=rf"^interface_in needs a network in CIDR notation, got {cidr!r}$"):
        kube_on_os.interface_in(cidr)


def test_reboot_required_reads_the_flag_file_and_its_packages_once_each(kube_on_os, tmp_path):
    flag = tmp_path / "reboot-required"
    kube_on_os.__salt__ = {
        "config.get": lambda key, default=None: str(flag) if key == "kube_on_os.reboot_required" else default
    }
    assert kube_on_os.reboot_required() == {"required": False, "packages": []}
    flag.write_text("*** System restart required ***\n")
    assert kube_on_os.reboot_required() == {"required": True, "packages": []}
    # notify-reboot-required appends a package at each of its updates.
    (tmp_path / "reboot-required.pkgs").write_text("linux-base\nlibc6\nlinux-base\n")
    assert kube_on_os.reboot_required() == {"required": True, "packages": ["linux-base", "libc6"]}


def test_reboot_required_looks_at_run_reboot_required_by_default(kube_on_os):
    asked = []
    kube_on_os.__salt__ = {"config.get": lambda key, default=None: asked.append(key) or default}
    kube_on_os.reboot_required()
    assert asked == ["kube_on_os.reboot_required"]
    assert kube_on_os.REBOOT_REQUIRED == "/run/reboot-required"


def run_bg(cmd, python_shell=False):
    """cmd.run_bg as Salt runs it: the shell line in the background, not waited for."""
    return {"pid": subprocess.Popen(cmd, shell=python_shell, start_new_session=True).pid}


def test_reboot_answers_first_and_reboots_in_the_background(kube_on_os):
    started = []
    kube_on_os.__salt__ = {
        "cmd.run_bg": lambda cmd, python_shell=False: started.append((cmd, python_shell)) or {"pid": 1}
    }
    assert kube_on_os.reboot() == {"in": 5}
    assert kube_on_os.reboot(2) == {"in": 2}
    assert started == [("sleep 5 && systemctl reboot", True), ("sleep 2 && systemctl reboot", True)]
    with pytest.raises(CommandExecutionError, match=r"^reboot needs a delay of 1 s or more, got 0$"):
        kube_on_os.reboot(0)
    assert len(started) == 2


def test_restart_minion_restarts_only_once_the_process_of_its_job_has_ended(kube_on_os, tmp_path):
    """
    A job is a process forked from the minion, which ends once its return has gone out: the
    restart command runs after it, however long the job still takes.
    """
    restarted = tmp_path / "restarted"
    kube_on_os.__opts__ = {"multiprocessing": True}
    kube_on_os.__salt__ = {
        "config.get": lambda key, default=None: f"touch {restarted}" if key == "kube_on_os.minion_restart" else default,
        "cmd.run_bg": run_bg,
    }
    job = os.fork()
    if job == 0:
        try:
            kube_on_os.restart_minion()
            time.sleep(3)
        finally:
            os._exit(0)
    time.sleep(2)
    assert not restarted.exists()
    os.waitpid(job, 0)
    deadline = time.monotonic() + 60  # the restart's process starting, on a loaded machine
    while not restarted.exists():
        assert time.monotonic() < deadline, "the restart command did not run once the job had ended"
        time.sleep(0.2)


def test_restart_minion_uses_salts_service_module_and_refuses_a_minion_without_job_processes(kube_on_os):
    started = []
    kube_on_os.__opts__ = {"multiprocessing": True}
    kube_on_os.__salt__ = {
        "config.get": lambda key, default=None: default,
        "cmd.run_bg": lambda cmd, python_shell=False: started.append((cmd, python_shell)) or {"pid": 1},
    }
    assert kube_on_os.restart_minion() == {"command": "salt-call --local service.restart salt-minion"}
    assert [(cmd.split("; done; ", 1)[1], shell) for cmd, shell in started] == [
        ("salt-call --local service.restart salt-minion", True)
    ]
    kube_on_os.__opts__ = {"multiprocessing": False}
    with pytest.raises(CommandExecutionError, match=r"multiprocessing: False"):
        kube_on_os.restart_minion()
    assert len(started) == 1


def test_minion_options_holds_when_the_running_minion_has_every_option(kube_on_os):
    kube_on_os.__opts__ = {"master_alive_interval": 60, "id": "k8s-master.lab.example"}
    assert kube_on_os.minion_options({"master_alive_interval": 60}) == {"options": {"master_alive_interval": 60}}


def test_minion_options_names_every_option_a_minion_that_did_not_restart_runs_with(kube_on_os):
    kube_on_os.__opts__ = {"master_alive_interval": 0}
    with pytest.raises(
        CommandExecutionError,
        match=(
            r"^salt-minion runs with master_alive_interval 0 \(core\.minion wrote 60\), "
            r"zmq_monitor None \(core\.minion wrote False\): it has not restarted since core\.minion wrote them$"
        ),
    ):
        kube_on_os.minion_options({"zmq_monitor": False, "master_alive_interval": 60})


@pytest.mark.parametrize("expected", [{}, None, "master_alive_interval: 60"])
def test_minion_options_refuses_what_is_not_a_mapping_of_options(kube_on_os, expected):
    kube_on_os.__opts__ = {"master_alive_interval": 60}
    with pytest.raises(CommandExecutionError, match=r"^minion_options needs a mapping of options, got "):
        kube_on_os.minion_options(expected)


@pytest.mark.parametrize(
    ("reports", "channel"),
    [
        # A new cluster: no node has the snap, so none reports.
        ({}, "1.35/stable"),
        ({"k8s-worker-0.lab.example": "'microk8s.installed' is not available."}, "1.35/stable"),
        # The Kubernetes master's channel, which a roll reaches first.
        (
            {
                "k8s-master.lab.example": {"version": "v1.29.0", "tracking": "1.29/stable"},
                "k8s-worker-0.lab.example": {"version": "v1.28.15", "tracking": "1.28/stable"},
            },
            "1.29/stable",
        ),
        # A rebuilt master has none yet: the newest any node tracks.
        (
            {
                "k8s-worker-0.lab.example": {"version": "v1.28.15", "tracking": "1.28/stable"},
                "k8s-worker-1.lab.example": {"version": "v1.30.1", "tracking": "1.30/candidate"},
                "k8s-worker-2.lab.example": None,
            },
            "1.30/candidate",
        ),
    ],
    ids=["new cluster", "module not loaded", "the master's", "the newest"],
)
def test_an_unset_channel_is_the_one_the_cluster_tracks(kube_on_os, reports, channel):
    asked = []
    kube_on_os.__salt__ = {"mine.get": lambda target, function: asked.append((target, function)) or reports}
    assert kube_on_os.microk8s_channel("k8s-master.lab.example", "1.35/stable") == channel
    assert asked == [("k8s-*", "microk8s.installed")]


def test_file_transfers_gives_this_hosts_files_sorted_with_their_defaults(kube_on_os):
    kube_on_os.__grains__ = {"id": "k8s-gpu-2.lab.example"}
    files = {
        "/etc/z.conf": {"source": "z.conf", "hosts": ["k8s-gpu-*"], "user": "ubuntu", "group": "adm", "mode": "0600"},
        "/etc/a.conf": {"source": "dir/a.conf", "hosts": ["bastion", "k8s-*"]},
        "/etc/bastion.conf": {"source": "b.conf", "hosts": ["bastion"]},
    }
    sources = "salt://file_transfer/files"
    assert kube_on_os.file_transfers(files) == [
        {"name": "/etc/a.conf", "source": f"{sources}/dir/a.conf", "user": "root", "group": "root", "mode": "0644"},
        {"name": "/etc/z.conf", "source": f"{sources}/z.conf", "user": "ubuntu", "group": "adm", "mode": "0600"},
    ]
    assert kube_on_os.file_transfers(None) == []


TARGET_RULE = "the target must be an absolute path with no '.', '..' or trailing '/'"
SOURCE_RULE = "source: must be a file's path under salt/file_transfer/files/, relative and with no '..'"
HOSTS_RULE = "hosts: must list the host names (globs, e.g. [k8s-*]) that take the file"
MODE_RULE = "mode: must be an octal mode in quotes, e.g. '0644'"


@pytest.mark.parametrize(
    ("target", "spec", "message"),
    [
        ("etc/x.conf", {}, f"file_transfer:etc/x.conf: {TARGET_RULE}"),
        ("/etc/../root/x", {}, f"file_transfer:/etc/../root/x: {TARGET_RULE}"),
        ("/etc/x/", {}, f"file_transfer:/etc/x/: {TARGET_RULE}"),
        ("/", {}, "file_transfer:/: the target must be a file, not /"),
        ("/etc/x", "x.conf", "file_transfer:/etc/x: must be a mapping with source and hosts"),
        (
            "/etc/x",
            {"source": "x", "hosts": ["*"], "owner": "root"},
            "file_transfer:/etc/x: unknown key owner (expected group, hosts, mode, source, user)",
        ),
        ("/etc/x", {"hosts": ["*"]}, f"file_transfer:/etc/x:{SOURCE_RULE}"),
        ("/etc/x", {"source": "../top.sls", "hosts": ["*"]}, f"file_transfer:/etc/x:{SOURCE_RULE}"),
        ("/etc/x", {"source": "/etc/shadow", "hosts": ["*"]}, f"file_transfer:/etc/x:{SOURCE_RULE}"),
        ("/etc/x", {"source": "x"}, f"file_transfer:/etc/x:{HOSTS_RULE}"),
        ("/etc/x", {"source": "x", "hosts": "k8s-*"}, f"file_transfer:/etc/x:{HOSTS_RULE}"),
        ("/etc/x", {"source": "x", "hosts": ["*"], "mode": 420}, f"file_transfer:/etc/x:{MODE_RULE}"),
        ("/etc/x", {"source": "x", "hosts": ["*"], "mode": "0999"}, f"file_transfer:/etc/x:{MODE_RULE}"),
        ("/etc/x", {"source": "x", "hosts": ["*"], "user": ""}, "file_transfer:/etc/x:user: must be a name, e.g. root"),
    ],
    ids=[
        "a relative target",
        "a target with ..",
        "a target ending in /",
        "the root",
        "an entry that is no mapping",
        "an unknown key",
        "no source",
        "a source with ..",
        "an absolute source",
        "no hosts",
        "hosts that are no list",
        "an unquoted mode",
        "a mode that is not octal",
        "an empty user",
    ],
)
def test_file_transfers_refuses_a_bad_entry_naming_its_key_on_every_host(kube_on_os, target, spec, message):
    # A rule holds on every host, whichever hosts the entry names: every highstate fails alike.
    kube_on_os.__grains__ = {"id": "bastion.lab.example"}
    with pytest.raises(CommandExecutionError) as error:
        kube_on_os.file_transfers({target: spec})
    assert str(error.value) == message


def test_file_transfers_needs_a_mapping_of_targets(kube_on_os):
    kube_on_os.__grains__ = {"id": "bastion.lab.example"}
    with pytest.raises(CommandExecutionError, match=r"^file_transfer: must map each target path to its file"):
        kube_on_os.file_transfers([{"name": "/etc/x", "source": "x"}])
