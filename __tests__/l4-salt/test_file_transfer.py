"""
The file_transfer state on the real Salt (``salt-call --local``): the pillar's files land on the
hosts it names, once, with their owner and mode; test mode changes nothing; a file that breaks a
rule, or that another state manages, stops every transfer with a line naming its pillar key.
The rehearsal transfers a file to a chosen set of real hosts (l5-rehearsal.test.ts).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml
from harness import salt_commands
from harness.salt_minion import ROOT, LocalMinion

STATE = "file_transfer-file_transfer-transferred"
STATE_ID = f"file_transfer_|-{STATE}_|-{STATE}_|-transferred"


def minion_with(tmp_path: Path, pillar: dict, host: str = "k8s-worker-1", sls: str = "") -> LocalMinion:
    """A minion named ``host`` whose file server has the tree's modules and file_transfer, corp-ca.crt and ``sls``."""
    files = tmp_path / "srv" / "salt"
    (files / "file_transfer" / "files").mkdir(parents=True)
    for name in ("_modules", "_states"):
        (files / name).symlink_to(ROOT / "salt" / name)
    (files / "file_transfer" / "init.sls").symlink_to(ROOT / "salt" / "file_transfer" / "init.sls")
    (files / "file_transfer" / "files" / "corp-ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    if sls:
        (files / "other.sls").write_text(sls)
    pillar_root = tmp_path / "srv" / "pillar"
    pillar_root.mkdir(parents=True)
    (pillar_root / "top.sls").write_text("base:\n  '*':\n    - data\n")
    (pillar_root / "data.sls").write_text("#!yaml\n" + yaml.safe_dump(pillar))
    minion = LocalMinion(tmp_path / "minion", minion_id=f"{host}.lab.example", file_root=files, pillar_root=pillar_root)
    # As orch.deploy's first step does on every minion: the tree's modules and states.
    minion.call("saltutil.sync_all")
    return minion


def apply(minion: LocalMinion, sls: str, *args: str) -> dict:
    """``state.apply SLS ARGS``'s results, whether the states succeed or not."""
    config = f"--config-dir={minion.config_dir}"
    result = salt_commands.run("salt-call", "--local", config, "--out=json", "state.apply", sls, *args, timeout=300)
    return json.loads(result.stdout)["local"]


def transfer(minion: LocalMinion, *args: str) -> dict:
    return apply(minion, "file_transfer", *args)[STATE_ID]


def test_a_file_lands_on_the_named_hosts_with_its_owner_and_mode_and_a_second_run_changes_nothing(tmp_path):
    target = tmp_path / "etc" / "ssl" / "corp-ca.crt"
    pillar = {"file_transfer": {str(target): {"source": "corp-ca.crt", "hosts": ["k8s-*"], "mode": "0640"}}}
    minion = minion_with(tmp_path, pillar)

    predicted = transfer(minion, "test=True")
    assert (predicted["result"], predicted["comment"], list(predicted["changes"])) == (
        None,
        f"would transfer {target}",
        [str(target)],
    )
    assert not target.exists()

    first = transfer(minion)
    assert (first["result"], first["comment"]) == (
        True,
        f"transferred {target} (1 of the pillar's files for this host)",
    )
    assert target.read_text() == "-----BEGIN CERTIFICATE-----\n"
    assert (oct(target.stat().st_mode & 0o777), target.stat().st_uid, target.stat().st_gid) == ("0o640", 0, 0)

    second = transfer(minion)
    assert (second["result"], second["changes"], second["comment"]) == (
        True,
        {},
        "every file is in place (1 of the pillar's files for this host)",
    )
    assert transfer(minion, "test=True")["changes"] == {}


def test_a_host_the_pillar_does_not_name_takes_no_file(tmp_path):
    target = tmp_path / "registry.toml"
    pillar = {"file_transfer": {str(target): {"source": "corp-ca.crt", "hosts": ["k8s-worker-0", "bastion"]}}}
    result = transfer(minion_with(tmp_path, pillar, host="k8s-worker-1"))
    assert (result["result"], result["changes"], result["comment"]) == (
        True,
        {},
        "the pillar's file_transfer names no file for this host",
    )
    assert not target.exists()


def test_without_the_pillar_key_there_is_nothing_to_transfer(tmp_path):
    result = transfer(minion_with(tmp_path, {"users": []}))
    assert (result["result"], result["comment"]) == (True, "the pillar's file_transfer names no file for this host")


def test_a_file_another_state_manages_stops_every_transfer_naming_the_key(tmp_path):
    good, taken = tmp_path / "good.conf", tmp_path / "taken.conf"
    other = f"other-file-managed:\n  file.managed:\n    - name: {taken}\n    - contents: ours\n"
    pillar = {
        "file_transfer": {
            str(good): {"source": "corp-ca.crt", "hosts": ["*"]},
            str(taken): {"source": "corp-ca.crt", "hosts": ["*"]},
        }
    }
    minion = minion_with(tmp_path, pillar, sls=other)
    results = apply(minion, "other,file_transfer")
    assert (results[STATE_ID]["result"], results[STATE_ID]["comment"]) == (
        False,
        f"file_transfer:{taken}: other (other-file-managed) manages this file: no file is transferred",
    )
    assert not good.exists()


def test_salt_and_microk8s_trees_are_never_written(tmp_path):
    pillar = {"file_transfer": {"/var/snap/microk8s/current/args/kubelet": {"source": "corp-ca.crt", "hosts": ["*"]}}}
    result = transfer(minion_with(tmp_path, pillar), "test=True")
    assert (result["result"], result["comment"]) == (
        False,
        "file_transfer:/var/snap/microk8s/current/args/kubelet: /var/snap/microk8s holds microk8s' own files,"
        " which the microk8s states change: no file is transferred",
    )


def test_a_bad_entry_or_a_missing_source_stops_every_transfer_naming_the_key(tmp_path):
    good = tmp_path / "good.conf"
    pillar = {
        "file_transfer": {
            str(good): {"source": "corp-ca.crt", "hosts": ["*"]},
            str(tmp_path / "lost.conf"): {"source": "sub/lost.conf", "hosts": ["*"]},
        }
    }
    minion = minion_with(tmp_path, pillar)
    result = transfer(minion)
    assert (result["result"], result["comment"]) == (
        False,
        f"file_transfer:{tmp_path / 'lost.conf'}:source:"
        " salt/file_transfer/files/sub/lost.conf is not in the Salt tree: no file is transferred",
    )
    assert not good.exists()

    (tmp_path / "srv" / "pillar" / "data.sls").write_text(
        "#!yaml\n" + json.dumps({"file_transfer": {"etc/relative.conf": {"source": "corp-ca.crt", "hosts": ["*"]}}})
    )
    result = transfer(minion)
    assert (result["result"], result["comment"]) == (
        False,
        "file_transfer:etc/relative.conf: the target must be an absolute path with no '.', '..' or trailing '/':"
        " no file is transferred",
    )
    assert not os.path.exists("etc/relative.conf")
