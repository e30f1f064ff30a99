"""
preview.sh's refusals, before it touches anything: a bad command line, or a staged candidate it
cannot preview. What it previews, on a real master and minions, is test_real_salt's.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.provisioners import HOST

USAGE = "usage: preview.sh [--timeout SECONDS] STAGING_DIR REPORT MINION_ID...\n"


def candidate(staging: Path) -> Path:
    for top in ("salt", "pillar"):
        (staging / top).mkdir(parents=True)
        (staging / top / "top.sls").write_text("base:\n  '*': []\n")
    (staging / "_from_terraform.sls").write_text("#!yaml\n{}\n")
    return staging


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "expected STAGING_DIR, REPORT and at least one minion id, got 0 arguments"),
        (["staging", "report.json", "Not A Minion"], 'MINION_ID "Not A Minion" is not a lower-case DNS name'),
        (["--timeout", "soon", "staging", "report.json", "m.example"], "--timeout must be"),
    ],
    ids=["no arguments", "a bad minion id", "a bad timeout"],
)
def test_a_bad_command_line_exits_2_with_the_usage(fakes, args, message):
    result = fakes.run("preview.sh", *args)
    assert result.returncode == 2
    assert result.stderr.startswith(f"preview.sh: {message}")
    assert result.stderr.endswith(USAGE)
    assert fakes.calls("salt") == fakes.calls("salt-run") == []


def test_a_candidate_it_cannot_preview_is_refused_in_one_line_before_any_change(fakes, tmp_path):
    root = tmp_path / "srv" / "koo-preview"
    root.parent.mkdir(parents=True)
    fakes.env.update(KOO_PREVIEW_ROOT=str(root))

    def refused(staging: Path) -> str:
        result = fakes.run("preview.sh", str(staging), str(tmp_path / "report.json"), "m.example")
        assert result.returncode == 1
        assert not root.exists() and not (tmp_path / "report.json").exists()
        assert fakes.calls("salt") == fakes.calls("salt-run") == []
        return result.stderr

    missing = tmp_path / "missing"
    assert refused(missing) == f"preview on {HOST}: staging directory {missing} does not exist\n"
    no_pillar_top = candidate(tmp_path / "no-pillar-top")
    (no_pillar_top / "pillar" / "top.sls").unlink()
    assert refused(no_pillar_top) == f"preview on {HOST}: {no_pillar_top}/pillar/top.sls is missing\n"
    other_env = candidate(tmp_path / "other-env")
    (other_env / "salt" / "top.sls").write_text("prod:\n  '*': []\n")
    assert refused(other_env) == f"preview on {HOST}: {other_env}/salt/top.sls has no base: environment to preview\n"
    linked = candidate(tmp_path / "linked")
    (linked / "salt" / "passwd").symlink_to("/etc/passwd")
    assert refused(linked) == f"preview on {HOST}: {linked}/salt/passwd is neither a file nor a directory\n"
