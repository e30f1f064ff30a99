"""
accept-minion-keys.sh, orchestrate.sh and preview.sh against a real Salt 3007 master and real
minions on 127.0.0.1 (SaltCluster from __tests__/harness), through wrappers that point salt,
salt-key and salt-run at that master: the real key lists, the real test.ping output, the real
state.event stream, the real orchestrate runner's JSON and a real test-mode highstate; and a
minion that restarts itself. About 3 minutes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml
from harness import salt_commands
from harness.provisioners import PROVISIONERS, ROOT, leftover_processes
from harness.real_salt import (
    DOMAIN,
    FAILED_LINES,
    FAILED_MESSAGE,
    MASTER,
    NODES,
    OVERLAY,
    SUCCEEDED_LINES,
    WORKER,
    write_wrappers,
)
from harness.salt_cluster import SaltCluster

INTRUDER = f"intruder.{DOMAIN}"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    class PendingKeysCluster(SaltCluster):
        """Leaves every minion key pending: accepting them is the job of the script under test."""

        def _accept(self, minion_ids, timeout=240):
            pass

    root = tmp_path_factory.mktemp("salt-cluster")
    cluster = PendingKeysCluster(root, {**NODES, INTRUDER: ("10.1.0.99", "intruder")}, {}, OVERLAY)
    cluster.bin = root / "wrappers"
    cluster.calls = root / "calls.log"
    write_wrappers(cluster.bin, cluster.master_dir, cluster.calls, root / MASTER / "etc", cluster.overlay)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def run(cluster, script: str, *args: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(PROVISIONERS / script), *args],
        env={**os.environ, "PATH": f"{cluster.bin}:{os.environ['PATH']}", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def key_lists(cluster) -> dict:
    """salt-key's lists; {} while it prints nothing (seen once in a full run, the master just started)."""
    output = subprocess.run(
        [str(cluster.bin / "salt-key"), "--list=all", "--out=json"], capture_output=True, text=True, check=True
    )
    return json.loads(output.stdout) if output.stdout.strip() else {}


@pytest.fixture(scope="module")
def accepted(cluster):
    """accept-minion-keys.sh for the master and the worker, once every minion has asked."""
    # 11 s alone; a loaded machine starts four Salt daemons far more slowly.
    deadline = time.monotonic() + 180
    while set(key_lists(cluster).get("minions_pre", [])) != {MASTER, WORKER, INTRUDER}:
        assert time.monotonic() < deadline, f"minion keys did not arrive: {key_lists(cluster)}\n{cluster.logs()}"
        time.sleep(0.5)
    return run(cluster, "accept-minion-keys.sh", "--timeout", "120", "--interval", "1", MASTER, WORKER)


def test_accepts_exactly_the_expected_keys_and_waits_for_their_answers(cluster, accepted):
    assert accepted.returncode == 0, f"{accepted.stderr}{accepted.stdout}\n{cluster.logs()}"
    output = accepted.stdout.splitlines()
    assert output[:4] == [
        f"accepted minion key: {MASTER}",
        f"accepted minion key: {WORKER}",
        f"unexpected minion key left pending: {INTRUDER}",
        "all 2 minion keys accepted",
    ]
    assert output[-1] == "all 2 minions answer test.ping"
    key_calls = [line for line in cluster.calls.read_text().splitlines() if line.startswith("salt-key -y")]
    assert key_calls == [f"salt-key -y --accept={MASTER}", f"salt-key -y --accept={WORKER}"]
    keys = key_lists(cluster)
    assert (sorted(keys["minions"]), keys["minions_pre"]) == ([MASTER, WORKER], [INTRUDER])


def test_a_real_orchestration_streams_per_host_lines_and_succeeds(cluster, accepted):
    result = run(cluster, "orchestrate.sh", "orch.koo_test_succeeded")
    assert result.returncode == 0, result.stderr
    output = result.stdout.splitlines()
    assert re.fullmatch(r"orchestration orch\.koo_test_succeeded started on \S+", output[0])
    assert sorted(output[1:-1]) == sorted(SUCCEEDED_LINES)
    assert re.fullmatch(
        r"orchestration orch\.koo_test_succeeded succeeded in \d+ s: 2 steps, 2 states changed on 2 minions",
        output[-1],
    )
    assert leftover_processes(str(cluster.master_dir), "state.event") == [], "state.event outlived the script"


def test_a_real_failed_orchestration_names_steps_minions_and_states(cluster, accepted):
    result = run(cluster, "orchestrate.sh", "orch.koo_test_failed")
    assert result.returncode == 1
    assert sorted(result.stdout.splitlines()[1:]) == sorted(FAILED_LINES)
    assert result.stderr == FAILED_MESSAGE + "\n"


def test_a_sync_right_after_the_tree_is_installed_gets_its_new_modules(cluster, accepted, tmp_path):
    """
    The master keeps the file list it serves for 20 s (fileserver_list_cache_time,
    salt/fileserver/__init__.py check_file_list_cache). Without clearing it, a sync_all within 20 s
    of a listing fetched the upgraded tree's changed modules but not its new ones (seen once in the
    upgrade's rehearsal: No module named 'salt.loaded.ext.module.microk8s._upgrade').
    """
    assert "orch/koo_test_succeeded.sls" in cluster.salt(MASTER, "cp.list_master", tgt_type="list")[MASTER]
    assert any((cluster.master_dir / "cache" / "file_lists" / "roots").glob("*.p")), "the master kept no file list"
    staging = tmp_path / "staging"
    # The served tree as it is, plus a module new in this version.
    shutil.copytree(cluster.overlay, staging / "salt")
    (staging / "salt" / "_modules").mkdir(exist_ok=True)
    (staging / "salt" / "_modules" / "koo_probe.py").write_text('def version():\n    return "new"\n')
    (staging / "pillar").mkdir()
    (staging / "_from_terraform.sls").write_text("#!yaml\n{}\n")
    result = run(
        cluster,
        "install-salt-tree.sh",
        str(staging),
        env={
            "KOO_SALT_ROOT": str(cluster.overlay),
            "KOO_PILLAR_ROOT": str(tmp_path / "pillar"),
            "KOO_TREE_OWNER": f"{os.getuid()}:{os.getgid()}",
        },
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    synced = cluster.salt(MASTER, "saltutil.sync_modules", tgt_type="list")
    assert "modules.koo_probe" in synced[MASTER], f"{synced}\n{cluster.logs()}"
    assert cluster.salt(MASTER, "koo_probe.version", tgt_type="list") == {MASTER: "new"}


def test_a_preview_environment_shows_the_candidate_and_never_reaches_the_live_runs(cluster, accepted, tmp_path):
    """
    master.conf's koo-preview environment, filled as a preview of a change fills it: the candidate
    tree with its top file as koo-preview-top.sls (for the koo-preview environment), the candidate
    pillar beside it. state.top of that file in that environment, in test mode, predicts what the
    candidate would change and changes nothing. While it is there, the live runs see none of it: a
    highstate merges every environment's top.sls (the preview has none), and the master compiles a
    minion's pillar from base alone (pillarenv) unless it asks for another.
    """
    target = tmp_path / "probe.txt"
    tree, pillar = cluster.preview_root / "salt", cluster.preview_root / "pillar"
    tree.mkdir(parents=True)
    pillar.mkdir(parents=True)
    (tree / "koo-preview-top.sls").write_text("koo-preview:\n  '*':\n    - koo_probe\n")
    managed = f"koo-probe-file-managed:\n  file.managed:\n    - name: {target}\n"
    (tree / "koo_probe.sls").write_text(managed + "    - contents: {{ pillar['koo_probe'] }}\n")
    (pillar / "top.sls").write_text("koo-preview:\n  '*':\n    - probe\n")
    (pillar / "probe.sls").write_text("#!yaml\nkoo_probe: from the candidate pillar\n")
    try:
        preview = cluster.salt(
            MASTER,
            "state.top",
            "koo-preview-top.sls",
            "saltenv=koo-preview",
            "pillarenv=koo-preview",
            "test=True",
            tgt_type="list",
            timeout=300,
        )
        (state,) = preview[MASTER].values()
        assert (state["result"], state["changes"]) == (None, {"newfile": str(target)}), preview
        assert not target.exists()
        assert cluster.salt(MASTER, "pillar.items", "pillarenv=koo-preview", tgt_type="list")[MASTER]["koo_probe"] == (
            "from the candidate pillar"
        )
        # The live runs, meanwhile: base's top file and pillar alone.
        assert "koo_probe" not in cluster.salt(MASTER, "pillar.items", tgt_type="list")[MASTER]
        assert list(cluster.salt(MASTER, "state.show_top", tgt_type="list")[MASTER]) == ["base"]
    finally:
        shutil.rmtree(cluster.preview_root)
        # What the master and the minion kept of it, which preview.sh removes (the next test checks that).
        shutil.rmtree(cluster.root / MASTER / "cache" / "files" / "koo-preview", ignore_errors=True)
        shutil.rmtree(cluster.root / "master" / "cache" / "roots" / "hash" / "koo-preview", ignore_errors=True)
        (cluster.root / "master" / "cache" / "file_lists" / "roots" / "koo-preview.p").unlink(missing_ok=True)


def staged_candidate(staging, target, contents: str, secret: str):
    """A candidate as the chain stages it: a tree whose one state writes ``target``, and its pillar."""
    (staging / "salt").mkdir(parents=True)
    (staging / "salt" / "top.sls").write_text("#!yaml\nbase:\n  '*':\n    - koo_probe\n")
    managed = f"koo-probe-file-managed:\n  file.managed:\n    - name: {target}\n"
    (staging / "salt" / "koo_probe.sls").write_text(managed + "    - contents: {{ pillar['koo_probe'] }}\n")
    # A custom module of the candidate's own: a highstate syncs its environment's modules first.
    (staging / "salt" / "_modules").mkdir()
    (staging / "salt" / "_modules" / "koo_probe_module.py").write_text('def said():\n    return "the candidate"\n')
    (staging / "pillar").mkdir()
    (staging / "pillar" / "top.sls").write_text("base:\n  '*':\n    - _from_terraform\n    - _cloud\n")
    (staging / "_from_terraform.sls").write_text(f'#!yaml\n"koo_probe": "{contents}"\n')
    # As Terraform writes the cloud pillar (yamlencode), with the credential the preview must hide.
    (staging / "_cloud.sls").write_text(
        f'#!yaml\n"openstack":\n  "cloud":\n    "application_credential_secret": "{secret}"\n'
    )


def daemon_files(cluster, name: str) -> dict[str, str]:
    """
    What a daemon (a minion, by its id, or "master") keeps in its directory, each file's SHA-256
    by path: the files a minion fetched from the master, its custom modules (extmods), compiled
    states and grains; the master's file lists and hashes, its record of each minion's grains and
    pillar. Not the jobs' records (cache/proc, cache/jobs), sockets, logs or the daemon's output,
    nor bytecode, which records its source's modification time. The master's map of its roots'
    files (``path:mtime`` lines, salt/fileserver/roots.py ``update``) without the bytecode that
    other tests' imports write into this checkout's salt/ at any moment.
    """
    home = cluster.root / name

    def content(path: Path) -> bytes:
        if path.name != "mtime_map":
            return path.read_bytes()
        return b"".join(line for line in path.read_bytes().splitlines(True) if b"/__pycache__/" not in line)

    return {
        str(path.relative_to(home)): hashlib.sha256(content(path)).hexdigest()
        for path in sorted(home.rglob("*"))
        if path.is_file()
        and "__pycache__" not in path.parts
        and path.relative_to(home).parts[:2] not in (("cache", "proc"), ("cache", "jobs"))
        and path.suffix not in (".log", ".out")
    }


def test_a_preview_says_what_the_candidate_would_change_on_each_minion_and_changes_nothing(cluster, accepted, tmp_path):
    """
    preview.sh on a real master: the candidate tree and pillar in the koo-preview environment,
    state.top in test mode on each minion, a file's diff where it would change, the cloud
    credential hidden, a minion that does not answer named; afterwards nothing of it is left, and
    the file it would write is not there. A highstate syncs its environment's custom modules into
    the minion first: the preview gives each minion the live tree's back, and forgets the
    candidate's files, so that its cache is as it was.
    """
    target, secret = tmp_path / "probe.txt", "s3cret-of-the-cloud"
    env = {
        "KOO_PREVIEW_ROOT": str(cluster.preview_root),
        "KOO_PILLAR_ROOT": str(tmp_path / "live-pillar"),
        "KOO_SALT_MASTER_CACHE": str(cluster.root / "master" / "cache"),
    }

    def preview(contents: str, *minions: str) -> tuple[subprocess.CompletedProcess, dict]:
        staging = tmp_path / "staging"
        staged_candidate(staging, target, contents, secret)
        report = tmp_path / "report.json"
        result = run(cluster, "preview.sh", "--timeout", "60", str(staging), str(report), *minions, env=env)
        assert not staging.exists() and not cluster.preview_root.exists(), "the preview left its candidate behind"
        return result, json.loads(report.read_text())

    target.write_text("old line\n")
    cluster.salt(MASTER, "saltutil.sync_all", tgt_type="list")
    # The master's map of its roots' files up to date, as its maintenance keeps it every minute; the
    # preview updates it too, and must leave it as the live roots have it.
    updated = cluster._run("salt-run", "--out=quiet", "fileserver.update", "backend=roots")
    assert updated.returncode == 0, updated.stderr
    kept = {name: daemon_files(cluster, name) for name in (MASTER, WORKER, "master")}
    assert any(path.endswith("/extmods/modules/kube_on_os.py") for path in kept[MASTER]), list(kept[MASTER])
    assert any(path.endswith(f"minions/{WORKER}/data.p") for path in kept["master"]), list(kept["master"])
    result, report = preview(f"new line with {secret}", MASTER, WORKER)
    for name, before in kept.items():
        after = daemon_files(cluster, name)
        changed = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
        assert changed == [], f"the preview changed on {name}: {changed}"
    assert result.returncode == 0, f"{result.stderr}{result.stdout}"
    assert target.read_text() == "old line\n"
    assert secret not in result.stdout + result.stderr + json.dumps(report)
    for minion in (MASTER, WORKER):
        assert f"{minion}: would change 1 of 1 state" in result.stdout
        assert report["hosts"][minion]["status"] == "changes"
    assert "    +new line with <secret>" in result.stdout.splitlines()
    assert "    -old line" in result.stdout.splitlines()
    assert report["hosts"][MASTER]["changing"][0]["id"] == "koo-probe-file-managed"

    target.write_text("the same\n")
    result, report = preview("the same", MASTER, INTRUDER)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [f"{MASTER}: no changes (1 state)", f"{INTRUDER}: did not answer"]
    assert report["hosts"] == {MASTER: {"status": "no-changes", "states": 1}, INTRUDER: {"status": "no-answer"}}


def test_a_batched_step_that_targets_no_minion_fails_the_orchestration(cluster, accepted):
    """Salt's own behaviour, the reason orch.deploy leaves its worker step out at one node."""
    result = run(cluster, "orchestrate.sh", "orch.koo_test_no_workers")
    assert result.returncode == 1
    assert result.stderr == (
        "orchestration orch.koo_test_no_workers failed: orch-test-salt-state-workers: No minions returned; "
        "not run because a requisite failed: orch-test-salt-function-cluster-check\n"
    )


def test_a_batched_step_waits_for_a_minion_too_busy_to_answer_for_25_s(cluster, accepted):
    """
    A loaded node answers Salt's find_job late. With Salt's default gather_job_timeout (10 s) the
    step gives up on it ("Run failed on minions", as a CI rehearsal did on a busy voter); with
    master.conf's it waits. The minion's processes are stopped before the step publishes and go on
    25 s after orchestrate.sh starts its salt-run: past the default's 5 + 10 s, within
    master.conf's 5 + 30 s.
    """
    group = os.getpgid(int((cluster.root / WORKER / "minion.pid").read_text()))
    os.killpg(group, signal.SIGSTOP)
    try:
        orchestration = subprocess.Popen(
            ["bash", str(PROVISIONERS / "orchestrate.sh"), "orch.koo_test_busy_minion"],
            env={**os.environ, "PATH": f"{cluster.bin}:{os.environ['PATH']}"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started = orchestration.stdout.readline()
        assert started.startswith("orchestration orch.koo_test_busy_minion started on "), started
        time.sleep(25)
    finally:
        os.killpg(group, signal.SIGCONT)
    stdout, stderr = orchestration.communicate(timeout=300)
    stdout = started + stdout
    assert orchestration.returncode == 0, stderr
    assert re.fullmatch(
        r"orchestration orch\.koo_test_busy_minion succeeded in \d+ s: 1 step, 1 state changed on 1 minion",
        stdout.splitlines()[-1],
    )


def test_a_restarted_master_leaves_its_minions_answering_and_without_a_status_master_every_second(cluster, accepted):
    """
    With Salt 3007's default zmq_monitor, a minion whose master restarts tears down and rebuilds its
    channels (where its main process was seen to hang in pyzmq's Context.term) and from then on
    runs status.master every master_alive_interval seconds, at the default 0 every second, kept in
    minion.d/_schedule.conf across restarts. These minions start with core.minion's options.
    """
    cluster.restart_master()
    deadline = time.monotonic() + 120
    while True:
        try:
            pinged = cluster.salt(f"{MASTER},{WORKER}", "test.ping", tgt_type="list", timeout=10)
        except AssertionError:
            # The salt CLI fails outright while the master starts (no request server yet).
            pinged = {}
        if pinged == {MASTER: True, WORKER: True}:
            break
        assert time.monotonic() < deadline, f"minions did not answer the restarted master: {pinged}\n{cluster.logs()}"
        time.sleep(1)
    # The minion handles the reconnection's events in its main loop: give it a few of its 1 s loops.
    time.sleep(5)
    targets = f"{MASTER},{WORKER}"
    schedules = cluster.salt(targets, "schedule.list", "show_all=True", "return_yaml=False", tgt_type="list")
    alive = {
        minion: [name for name in sorted(jobs) if name.startswith("__master_alive")]
        for minion, jobs in schedules.items()
    }
    assert alive == {MASTER: [], WORKER: []}


def test_a_minion_restarted_by_its_own_job_restarts_once_the_job_has_returned(cluster, accepted):
    """
    core.minion restarts the minion from inside a job (kube_on_os.restart_minion). A job hands its
    return to the minion's main process, so a restart before the job has returned loses the return,
    and the orchestration step fails ("Minion did not return"). Here a state after the restart
    outlasts the fixed 5 s delay core.minion once waited; the job still returns, and then the minion
    runs again, a new process.
    """
    pidfile = cluster.root / WORKER / "minion.pid"
    before = pidfile.read_text().strip()
    # As orch.deploy syncs the modules before core.minion (state.sls alone does not).
    assert cluster.salt(WORKER, "saltutil.sync_modules", tgt_type="list").keys() == {WORKER}
    returns = cluster.state(WORKER, "koo_test.restart_then_slow")
    assert isinstance(returns.get(WORKER), dict), f"{returns}\n{cluster.logs()}"
    assert {name: state["result"] for name, state in returns[WORKER].items()} == {
        "koo-test-restart": True,
        "koo-test-slow-cmd-run": True,
    }
    deadline = time.monotonic() + 120
    while True:
        try:
            pinged = cluster.salt(WORKER, "test.ping", tgt_type="list", timeout=10)
        except AssertionError:
            pinged = {}
        restarted = pidfile.exists() and pidfile.read_text().strip() not in ("", before)
        if restarted and pinged == {WORKER: True}:
            break
        assert time.monotonic() < deadline, f"the minion did not restart: {pinged}\n{cluster.logs()}"
        time.sleep(1)


def restarted(cluster, minions: tuple[str, ...], before: list[str]) -> list[str]:
    """Waits until each minion runs as a new process that answers; its pids."""
    pidfiles = [cluster.root / minion / "minion.pid" for minion in minions]
    deadline = time.monotonic() + 120
    while True:
        pids = [pidfile.read_text().strip() if pidfile.exists() else "" for pidfile in pidfiles]
        try:
            pinged = cluster.salt(",".join(minions), "test.ping", tgt_type="list", timeout=10)
        except AssertionError:
            pinged = {}
        if all(pid not in ("", old) for pid, old in zip(pids, before, strict=True)) and pinged == dict.fromkeys(
            minions, True
        ):
            return pids
        assert time.monotonic() < deadline, f"the minions did not restart: {pinged}\n{cluster.logs()}"
        time.sleep(1)


def test_a_master_change_restarts_every_minion_with_its_options_before_the_master(cluster, accepted):
    """
    A change to the Salt master's configuration restarts the master. orchestrate.sh runs the real
    orch.minions first: each minion writes core.minion's options and restarts with them, and only
    then is the master configured. Here the master's state records each minion's pid and options
    instead of restarting the master (the test above restarts it).
    """
    minions = (MASTER, WORKER)
    # Minions as an earlier version left them: Salt 3007's default zmq_monitor.
    for minion in minions:
        config_file = cluster.root / minion / "etc" / "minion"
        config_file.write_text(yaml.safe_dump({**yaml.safe_load(config_file.read_text()), "zmq_monitor": True}))
    before = [(cluster.root / minion / "minion.pid").read_text().strip() for minion in minions]
    assert cluster.salt(",".join(minions), "saltutil.sync_modules", tgt_type="list").keys() == set(minions)
    cluster.salt(",".join(minions), "kube_on_os.restart_minion", tgt_type="list")
    old = restarted(cluster, minions, before)
    running = cluster.salt(",".join(minions), "config.get", "zmq_monitor", tgt_type="list")
    assert running == dict.fromkeys(minions, True)

    seen = cluster.root / "minions-when-the-master-is-configured"
    state = cluster.overlay / "salt_master" / "init.sls"
    unchanged = state.read_text()
    state.write_text(
        "koo-test-salt-master-config-file-managed:\n"
        "  file.managed:\n"
        f"    - name: {cluster.root / 'master-config'}\n"
        '    - contents: "changed"\n'
        "koo-test-salt-master-restarted:\n"
        "  cmd.run:\n"
        f"    - name: awk 1 {' '.join(str(cluster.root / minion / 'minion.pid') for minion in minions)} > {seen}\n"
        "    - onchanges:\n"
        "      - file: koo-test-salt-master-config-file-managed\n"
    )
    try:
        result = run(cluster, "orchestrate.sh", "orch.koo_test_succeeded")
    finally:
        state.write_text(unchanged)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{cluster.logs()}"
    out = result.stdout.splitlines()
    assert re.fullmatch(
        r"the Salt master's configuration changes on \S+: every minion takes its options before the master restarts",
        out[0],
    )
    assert re.fullmatch(r"orchestration orch\.minions started on \S+", out[1])
    assert any(re.fullmatch(r"orchestration orch\.minions succeeded in \d+ s: 3 steps, .*", line) for line in out), out
    # Both minions ran as new processes, with the options, when the master's state ran.
    at_master_change = seen.read_text().split()
    assert [pid not in ("", was) for pid, was in zip(at_master_change, old, strict=True)] == [True, True]
    running = cluster.salt(",".join(minions), "config.get", "zmq_monitor", tgt_type="list")
    assert running == dict.fromkeys(minions, False)
    options = (ROOT / "salt" / "core" / "files" / "minion.conf").read_text()
    for minion in minions:
        assert (cluster.root / minion / "etc" / "minion.d" / "kube-on-os.conf").read_text() == options
    assert out[-1].startswith("orchestration orch.koo_test_succeeded succeeded in "), out


def test_orch_minions_waits_for_a_minion_too_busy_to_answer_on_a_master_an_earlier_version_configured(
    cluster, accepted
):
    """
    orch.minions runs before the master is configured: upgrading from a version whose master.conf
    did not raise gather_job_timeout, Salt's default 10 s rules it. A loaded minion answered
    find_job late, and every step's minions "did not return" though they had (CI, the upgrade's
    rehearsal), or, in the module sync, were left out without a word. The minion here is stopped
    for 30 s after the orchestration starts, past Salt's default 5 + 10 s before a step gives up.
    """
    earlier = cluster.root / "master-of-an-earlier-version"
    cluster._write(earlier, "master", {**cluster.master_config(), "gather_job_timeout": 10})
    group = os.getpgid(int((cluster.root / WORKER / "minion.pid").read_text()))
    os.killpg(group, signal.SIGSTOP)
    resume = threading.Timer(30, os.killpg, (group, signal.SIGCONT))
    resume.start()
    try:
        result = salt_commands.run(
            "salt-run", f"--config-dir={earlier}", "--out=json", "state.orchestrate", "orch.minions", timeout=300
        )
    finally:
        resume.cancel()
        os.killpg(group, signal.SIGCONT)
    assert result.stdout.startswith("{"), f"{result.stdout}{result.stderr}"
    # The orchestrate runner's JSON: {"data": {"<master>_master": {state id: result}}, ...}.
    (states,) = json.loads(result.stdout)["data"].values()
    failed = {name: state["comment"] for name, state in states.items() if not state["result"]}
    assert not failed, f"{json.dumps(failed, indent=1)}\n{cluster.logs()}"
    # The module sync, which passes without a minion that did not answer, waited for the worker.
    (synced,) = (state for name, state in states.items() if "-sync-all_" in name)
    assert set(synced["changes"]["ret"]) == {MASTER, WORKER}, synced["comment"]


def test_a_replaced_machine_whose_minion_asked_before_its_old_key_went_is_accepted_and_answers(
    cluster, accepted, tmp_path
):
    """
    A replaced machine's new minion may ask the master before accept-minion-keys.sh deletes the old
    machine's key (a machine that boots fast, an image with Salt already installed). The master
    denies the new key; a minion that is denied exits 10 to 20 s later unless rejected_retry is set
    (salt/crypt.py, sign_in), and no service manager starts it again: Salt's own salt-minion.service
    has no Restart=. The script then waited for the new key until its timeout (the rehearsal's roll).
    """
    ledger = tmp_path / "kube-on-os-machines"
    ledger.write_text(f"{WORKER} machine-before\n")
    env = {"KOO_MACHINE_LEDGER": str(ledger)}
    cluster.replace_machine(WORKER)
    deadline = time.monotonic() + 120
    while WORKER not in key_lists(cluster).get("minions_denied", []):
        assert time.monotonic() < deadline, (
            f"the new minion's key was not denied: {key_lists(cluster)}\n{cluster.logs()}"
        )
        time.sleep(0.5)
    # A denied minion without rejected_retry exits within 20 s, while the script waits for its key.
    result = run(
        cluster,
        "accept-minion-keys.sh",
        "--timeout",
        "60",
        "--interval",
        "1",
        MASTER,
        f"{WORKER}=machine-after",
        env=env,
    )
    assert result.returncode == 0, f"{result.stderr}{result.stdout}\n{cluster.logs()}"
    output = result.stdout.splitlines()
    assert output[0] == f"deleted the minion key of {WORKER}: its machine machine-before was replaced by machine-after"
    assert f"accepted minion key: {WORKER}" in output
    assert output[-1] == "all 2 minions answer test.ping"
    assert ledger.read_text() == f"{WORKER} machine-after\n"
