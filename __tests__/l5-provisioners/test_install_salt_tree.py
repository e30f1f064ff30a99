"""install-salt-tree.sh STAGING_DIR, with the salt and pillar roots in a temporary /srv."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import pytest
from harness.provisioners import HOST, ROOT

# Shaped like what Terraform writes (constructs/provisioning/pillar.ts): the renderer line, then YAML.
FROM_TERRAFORM = '#!yaml\n"network":\n  "private_cidr": "10.1.0.0/16"\n'


def tree_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "lost+found" not in path.relative_to(root).parts
    }


def digest(files: dict[str, bytes]) -> str:
    """What the script documents: sha256sum over the files sorted by path, hashed again."""
    listing = "".join(f"{hashlib.sha256(content).hexdigest()}  ./{name}\n" for name, content in sorted(files.items()))
    return hashlib.sha256(listing.encode()).hexdigest()[:12]


@pytest.fixture
def srv(tmp_path: Path, fakes):
    """A /srv whose salt root is a mount point with lost+found and last deployment's files."""
    srv = tmp_path / "srv"
    salt_root = srv / "salt"
    (salt_root / "lost+found").mkdir(parents=True)
    (salt_root / "lost+found" / "#1234").write_text("recovered")
    (salt_root / "lost+found").chmod(0o700)
    (salt_root / "top.sls").write_text("old top\n")
    (salt_root / "retired" / "init.sls").parent.mkdir()
    (salt_root / "retired" / "init.sls").write_text("a state no longer in the tree\n")
    (salt_root / ".hidden-stale").write_text("stale\n")
    (srv / "pillar" / "old").mkdir(parents=True)
    (srv / "pillar" / "old" / "secret.sls").write_text("stale: pillar\n")
    fakes.env.update(
        KOO_SALT_ROOT=str(salt_root),
        KOO_PILLAR_ROOT=str(srv / "pillar"),
        KOO_TREE_OWNER=f"{os.getuid()}:{os.getgid()}",
    )
    return srv


def stage(staging: Path) -> Path:
    """What Terraform uploads: the project's salt/ and pillar/ and a _from_terraform.sls."""
    shutil.copytree(ROOT / "salt", staging / "salt", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "pillar", staging / "pillar", ignore=shutil.ignore_patterns("__pycache__"))
    (staging / "_from_terraform.sls").write_text(FROM_TERRAFORM)
    return staging


@pytest.fixture
def staging(tmp_path: Path) -> Path:
    return stage(tmp_path / "home" / ".kube-on-os" / "staging")


def test_replaces_the_salt_tree_in_place_and_keeps_lost_and_found(fakes, srv, staging):
    expected = tree_files(staging / "salt")
    mount_point = (srv / "salt").stat().st_ino
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.returncode == 0, result.stderr
    assert tree_files(srv / "salt") == expected
    assert not (srv / "salt" / "retired").exists()
    assert not (srv / "salt" / ".hidden-stale").exists()
    assert (srv / "salt").stat().st_ino == mount_point
    assert (srv / "salt" / "lost+found" / "#1234").read_text() == "recovered"
    assert stat.S_IMODE((srv / "salt" / "lost+found").stat().st_mode) == 0o700
    assert sorted(p.name for p in (srv / "salt").iterdir() if p.name.startswith(".")) == []


def test_the_master_lists_the_new_tree_next(fakes, srv, staging):
    """Its cached file list is cleared once the tree is in place (test_real_salt shows why)."""
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.returncode == 0, result.stderr
    assert fakes.calls("salt-run") == [["--out=quiet", "fileserver.clear_file_list_cache"]]
    assert fakes.read()["file_list"] == sorted(tree_files(srv / "salt"))


def test_a_master_that_cannot_clear_its_file_list_fails_the_install(fakes, srv, staging):
    fakes.update(fileserver_clear_file_list_cache={"error": "Salt request timed out."})
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.returncode == 1
    assert result.stderr == (
        "Salt request timed out.\n"
        f"install-salt-tree on {HOST}: salt-run fileserver.clear_file_list_cache failed; the new Salt tree "
        "is in place, but the master may serve its old file list for 20 s\n"
    )


def test_swaps_in_the_pillar_with_the_terraform_values(fakes, srv, staging):
    expected = {**tree_files(staging / "pillar"), "_from_terraform.sls": FROM_TERRAFORM.encode()}
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.returncode == 0, result.stderr
    assert tree_files(srv / "pillar") == expected
    assert sorted(p.name for p in srv.iterdir()) == ["pillar", "salt"]


def test_sets_modes_and_owner(fakes, srv, staging):
    assert fakes.run("install-salt-tree.sh", str(staging)).returncode == 0
    for root, directory_mode, file_mode in ((srv / "salt", 0o755, 0o644), (srv / "pillar", 0o750, 0o640)):
        for path in [root, *root.rglob("*")]:
            if "lost+found" in path.relative_to(srv).parts:
                continue
            mode = stat.S_IMODE(path.stat().st_mode)
            assert mode == (directory_mode if path.is_dir() else file_mode), path
            assert (path.stat().st_uid, path.stat().st_gid) == (os.getuid(), os.getgid()), path


# Shaped like CloudIntegration's pillar (constructs/cloud-integration.ts); the secret is made up.
CLOUD = '#!yaml\n"openstack":\n  "cloud":\n    "application_credential_secret": "s3cr3t"\n'


def test_installs_the_cloud_pillar_readable_by_its_owner_alone(fakes, srv, staging):
    (staging / "_cloud.sls").write_text(CLOUD)
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.returncode == 0, result.stderr
    installed = srv / "pillar" / "_cloud.sls"
    assert installed.read_text() == CLOUD
    assert stat.S_IMODE(installed.stat().st_mode) == 0o600
    assert "s3cr3t" not in result.stdout + result.stderr
    # The next sync without one (cloud_integration turned off by an older chain) leaves none behind.
    assert not staging.exists()
    assert fakes.run("install-salt-tree.sh", str(stage(staging))).returncode == 0
    assert not installed.exists()


def test_prints_counts_and_digests_and_removes_the_staging_dir(fakes, srv, staging):
    salt_files = tree_files(staging / "salt")
    pillar_files = {**tree_files(staging / "pillar"), "_from_terraform.sls": FROM_TERRAFORM.encode()}
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.stdout == (
        f"installed Salt tree on {HOST}: {srv}/salt {len(salt_files)} files, sha256 {digest(salt_files)}; "
        f"{srv}/pillar {len(pillar_files)} files, sha256 {digest(pillar_files)}\n"
    )
    assert not staging.exists()


def test_a_second_run_installs_the_same_tree(fakes, srv, staging, tmp_path):
    backup = tmp_path / "backup"
    shutil.copytree(staging, backup)
    first = fakes.run("install-salt-tree.sh", str(staging))
    shutil.copytree(backup, staging)
    second = fakes.run("install-salt-tree.sh", str(staging))
    assert (first.returncode, second.returncode) == (0, 0)
    assert first.stdout == second.stdout


def test_creates_the_pillar_root_on_first_deployment(fakes, srv, staging):
    shutil.rmtree(srv / "pillar")
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.returncode == 0, result.stderr
    assert (srv / "pillar" / "_from_terraform.sls").read_text() == FROM_TERRAFORM


@pytest.mark.parametrize(
    ("remove", "message"),
    [
        ("pillar", "{staging}/pillar is missing (expected a directory)"),
        ("salt", "{staging}/salt is missing (expected a directory)"),
        ("_from_terraform.sls", "{staging}/_from_terraform.sls is missing"),
    ],
)
def test_a_missing_input_changes_nothing(fakes, srv, staging, remove, message):
    before = {root: tree_files(srv / root) for root in ("salt", "pillar")}
    target = staging / remove
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.returncode == 1
    assert result.stderr == f"install-salt-tree on {HOST}: {message.format(staging=staging)}\n"
    assert {root: tree_files(srv / root) for root in ("salt", "pillar")} == before
    assert staging.exists()


def test_a_missing_staging_dir_or_salt_root_is_an_error(fakes, srv, staging, tmp_path):
    result = fakes.run("install-salt-tree.sh", str(tmp_path / "nowhere"))
    assert (result.returncode, result.stderr) == (
        1,
        f"install-salt-tree on {HOST}: staging directory {tmp_path}/nowhere does not exist\n",
    )
    shutil.rmtree(srv / "salt")
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert (result.returncode, result.stderr) == (
        1,
        f"install-salt-tree on {HOST}: salt root {srv}/salt does not exist (is the Salt volume mounted?)\n",
    )


def test_refuses_links_in_the_staging_dir(fakes, srv, staging):
    (staging / "salt" / "shadow").symlink_to("/etc/shadow")
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.returncode == 1
    assert result.stderr == f"install-salt-tree on {HOST}: {staging}/salt/shadow is neither a file nor a directory\n"
    assert (srv / "salt" / "top.sls").read_text() == "old top\n"


@pytest.mark.parametrize("inside", ["", "salt/staging"], ids=["contains the roots", "inside the salt root"])
def test_refuses_a_staging_dir_that_overlaps_a_root(fakes, srv, inside):
    staging = srv / inside
    for directory in ("salt", "pillar"):
        (staging / directory).mkdir(parents=True, exist_ok=True)
    (staging / "_from_terraform.sls").write_text(FROM_TERRAFORM)
    result = fakes.run("install-salt-tree.sh", str(staging))
    assert result.returncode == 1
    assert result.stderr == f"install-salt-tree on {HOST}: staging directory {staging} overlaps {srv}/salt\n"
    assert (srv / "salt" / "top.sls").read_text() == "old top\n"


def test_usage(fakes):
    result = fakes.run("install-salt-tree.sh")
    assert (result.returncode, result.stderr) == (
        2,
        "install-salt-tree.sh: expected one argument, got 0\nusage: install-salt-tree.sh STAGING_DIR\n",
    )
