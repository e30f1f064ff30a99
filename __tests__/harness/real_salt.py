"""
The real Salt for the provisioner tests: SaltCluster (harness.salt_cluster) (a salt-master and
salt-minions on 127.0.0.1, each minion in its own directory) serving a few test orchestrations,
and a bin/ of salt, salt-key and salt-run wrappers that point the real commands at its master
configuration and log every call, for the scripts under test to find first on PATH.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.layout import LAB, fake_nodes

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = LAB.domain
MASTER = LAB.master.fqdn
WORKER = LAB.worker(0).fqdn
NODES = fake_nodes(LAB.master, LAB.worker(0))

# Shaped like orch/deploy.sls: module sync first, then states per role, then a cluster check.
# The failing one fails in three ways: a minion state, a function that raises, and a step that
# never runs because its requisite failed.
OVERLAY = {
    "orch/koo_test_succeeded.sls": """
orch-test-salt-function-sync-all:
  salt.function:
    - name: saltutil.sync_all
    - tgt: "*"

orch-test-salt-state-all:
  salt.state:
    - tgt: "*"
    - sls: koo_test.ok
    - require:
      - salt: orch-test-salt-function-sync-all
""",
    "orch/koo_test_failed.sls": """
orch-test-salt-function-sync-all:
  salt.function:
    - name: saltutil.sync_all
    - tgt: "*"

orch-test-salt-state-master:
  salt.state:
    - tgt: "k8s-master.*"
    - sls: koo_test.ok
    - require:
      - salt: orch-test-salt-function-sync-all

orch-test-salt-state-workers:
  salt.state:
    - tgt: "k8s-worker-*"
    - sls: koo_test.join
    - require:
      - salt: orch-test-salt-state-master

orch-test-salt-function-cluster-check:
  salt.function:
    - name: test.exception
    - tgt: "k8s-master.*"
    - arg:
      - "cluster check failed: k8s-worker-0.lab.example is NotReady"
    - require:
      - salt: orch-test-salt-function-sync-all

orch-test-salt-function-after-workers:
  salt.function:
    - name: test.true
    - tgt: "k8s-master.*"
    - require:
      - salt: orch-test-salt-state-workers
""",
    # orch.deploy's worker step as it would be at num_kube_nodes = 1: batched, targeting no minion.
    "orch/koo_test_no_workers.sls": """
orch-test-salt-state-workers:
  salt.state:
    - tgt: "k8s-nobody-*"
    - sls: koo_test.ok
    - batch: "25%"

orch-test-salt-function-cluster-check:
  salt.function:
    - name: test.true
    - tgt: "k8s-master.*"
    - require:
      - salt: orch-test-salt-state-workers
""",
    # orch.deploy's control-plane step: batched, on one minion (test_real_salt pauses it).
    "orch/koo_test_busy_minion.sls": """
orch-test-salt-state-control-plane:
  salt.state:
    - tgt: "k8s-worker-0.lab.example"
    - tgt_type: list
    - sls: koo_test.ok
    - batch: 1
""",
    # What orchestrate.sh applies masterless before orchestrating (the real one configures the
    # machine's own salt-master); the salt-call wrapper's file root is this overlay.
    "salt_master/init.sls": """
koo-test-salt-master-test-succeed_without_changes:
  test.succeed_without_changes: []
""",
    # core.minion as orch.minions applies it, its file beside this minion's own configuration
    # (the real one writes /etc/salt/minion.d): the same options, and the same restart.
    "core/minion.sls": """
core-minion-config-file-managed:
  file.managed:
    - name: {{ salt["file.dirname"](opts["conf_file"]) }}/minion.d/kube-on-os.conf
    - source: salt://core/files/minion.conf
    - makedirs: true

core-minion-restarted:
  module.run:
    - kube_on_os.restart_minion: []
    - onchanges:
      - file: core-minion-config-file-managed
""",
    "koo_test/ok.sls": """
koo-test-ok-test-succeed_with_changes:
  test.succeed_with_changes: []

koo-test-ok-test-succeed_without_changes:
  test.succeed_without_changes: []
""",
    # core.minion's restart, then a state that outlasts the fixed delay it once had (test_real_salt).
    "koo_test/restart_then_slow.sls": """
koo-test-restart:
  module.run:
    - kube_on_os.restart_minion: []

koo-test-slow-cmd-run:
  cmd.run:
    - name: sleep 15
    - require:
      - module: koo-test-restart
""",
    "koo_test/join.sls": """
koo-test-join-test-succeed_with_changes:
  test.succeed_with_changes: []

microk8s-joined-microk8s-cluster_joined:
  test.fail_without_changes:
    - comment: "join failed: the master refused the token (HTTP 500)\\nretried 8 times"
""",
}


# What orchestrate.sh prints for them: per-host lines (in event order, which may vary) and the
# failure message.
SUCCEEDED_LINES = [
    "[k8s-worker-0.lab.example] saltutil.sync_all: ok",
    "[k8s-master.lab.example] saltutil.sync_all: ok",
    "[k8s-worker-0.lab.example] state.sls: 2 states, 1 changed, 0 failed",
    "[k8s-master.lab.example] state.sls: 2 states, 1 changed, 0 failed",
]
FAILED_LINES = [
    "[k8s-master.lab.example] saltutil.sync_all: ok",
    "[k8s-worker-0.lab.example] saltutil.sync_all: ok",
    "[k8s-master.lab.example] state.sls: 2 states, 1 changed, 0 failed",
    "[k8s-worker-0.lab.example] state.sls: 2 states, 1 changed, 1 failed: microk8s-joined-microk8s-cluster_joined",
    "[k8s-master.lab.example] test.exception: failed (retcode 1): "
    "Exception: cluster check failed: k8s-worker-0.lab.example is NotReady",
]
FAILED_MESSAGE = (
    "orchestration orch.koo_test_failed failed: "
    "orch-test-salt-state-workers: k8s-worker-0.lab.example: microk8s-joined-microk8s-cluster_joined "
    "(join failed: the master refused the token (HTTP 500)); "
    "orch-test-salt-function-cluster-check: k8s-master.lab.example: "
    "Exception: cluster check failed: k8s-worker-0.lab.example is NotReady; "
    "not run because a requisite failed: orch-test-salt-function-after-workers"
)


def write_wrappers(
    bin_dir: Path, master_dir: Path, log: Path, minion_dir: Path | None = None, file_root: Path | None = None
) -> None:
    """
    salt, salt-key and salt-run in bin_dir: the venv's real ones, with the cluster's config; and,
    given a minion's config and a file root, salt-call, masterless on those.
    """
    venv_bin = Path(sys.executable).parent
    bin_dir.mkdir(parents=True, exist_ok=True)
    for command in ("salt", "salt-key", "salt-run"):
        wrapper = bin_dir / command
        wrapper.write_text(
            "#!/bin/sh\n"
            f"printf '%s\\n' \"{command} $*\" >>'{log}'\n"
            f"exec '{venv_bin / command}' --config-dir='{master_dir}' \"$@\"\n"
        )
        wrapper.chmod(0o755)
    if minion_dir and file_root:
        wrapper = bin_dir / "salt-call"
        wrapper.write_text(
            "#!/bin/sh\n"
            "printf '%s\\n' \"salt-call $*\" >>'" + str(log) + "'\n"
            f"exec '{venv_bin / 'salt-call'}' --config-dir='{minion_dir}' --file-root='{file_root}' \"$@\"\n"
        )
        wrapper.chmod(0o755)
