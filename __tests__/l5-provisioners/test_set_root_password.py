"""set-root-password.sh SECRET_FILE MINION_ID..., against fake salt."""

from __future__ import annotations

import subprocess

import pytest

MINIONS = ["salt.lab.example.org", "bastion.lab.example.org", "k8s-master.lab.example.org"]
PASSWORD = "correct horse battery staple"
# `openssl passwd -6 -salt saltsalt 'correct horse battery staple'`: root_password_hash's form.
HASH = "$6$saltsalt$" + "x" * 86


def state(returns: dict | None = None, **extra) -> dict:
    keys = {"minions": MINIONS, "minions_pre": [], "minions_rejected": [], "minions_denied": []}
    return {
        "keys": keys,
        "returns": {"shadow.set_password": returns if returns is not None else dict.fromkeys(MINIONS, True)},
        **extra,
    }


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret" / "root-password"
    path.parent.mkdir(mode=0o700)
    path.write_text(f"plaintext\n{PASSWORD}")
    return path


def verifies(password: str, crypt_hash: str) -> bool:
    """Whether `crypt_hash` is a SHA-512 crypt of `password`, recomputed by openssl with its salt."""
    salt = crypt_hash.split("$")[2]
    again = subprocess.run(
        ["openssl", "passwd", "-6", "-salt", salt, "-stdin"], input=password, capture_output=True, text=True, check=True
    )
    return again.stdout.strip() == crypt_hash


def test_sets_a_hash_of_the_password_on_every_minion_and_removes_the_plaintext(fakes, secret):
    fakes.update(**state())
    result = fakes.run("set-root-password.sh", str(secret), *MINIONS)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "root password: set on 3 machines\n"
    [call] = fakes.calls("salt")
    assert call[:-1] == [
        "--out=json",
        "--static",
        "--timeout=60",
        "--list",
        ",".join(MINIONS),
        "shadow.set_password",
        "root",
    ]
    assert call[-1].startswith("$6$") and verifies(PASSWORD, call[-1])
    assert not secret.exists()
    assert PASSWORD not in result.stdout + result.stderr + fakes.log_file.read_text() + fakes.state_file.read_text()


def test_sets_a_given_hash_as_it_is_on_every_minion(fakes, secret):
    fakes.update(**state())
    secret.write_text(f"hash\n{HASH}")
    result = fakes.run("set-root-password.sh", str(secret), *MINIONS)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "root password: set on 3 machines\n"
    [call] = fakes.calls("salt")
    assert call[-3:] == ["shadow.set_password", "root", HASH]
    assert not secret.exists()


def test_a_hash_that_is_not_a_crypt_hash_fails_without_showing_it(fakes, secret):
    fakes.update(**state())
    secret.write_text("hash\nnot-a-crypt-hash")
    result = fakes.run("set-root-password.sh", str(secret), *MINIONS)
    message = "root password: the hash is not a crypt(3) SHA-512, SHA-256, yescrypt or bcrypt hash"
    assert (result.returncode, result.stdout, result.stderr) == (1, "", f"{message}\n")
    assert fakes.calls("salt") == []
    assert not secret.exists()


def test_a_plaintext_alone_is_the_earlier_chains_form_and_is_hashed(fakes, secret):
    # As the chain wrote it before the kind line: the upgrade tests run earlier steps with today's scripts.
    fakes.update(**state())
    secret.write_text(PASSWORD)
    result = fakes.run("set-root-password.sh", str(secret), *MINIONS)
    assert result.returncode == 0, result.stderr
    [call] = fakes.calls("salt")
    assert verifies(PASSWORD, call[-1])
    assert not secret.exists()


def test_an_empty_secret_leaves_the_password_alone(fakes, secret):
    fakes.update(**state())
    secret.write_text("")
    result = fakes.run("set-root-password.sh", str(secret), *MINIONS)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert fakes.calls("salt") == []
    assert not secret.exists()


@pytest.mark.parametrize(
    ("returns", "failed"),
    [
        ({MINIONS[0]: True, MINIONS[1]: False, MINIONS[2]: True}, MINIONS[1]),
        ({MINIONS[0]: True, MINIONS[1]: True}, MINIONS[2]),
        ({**dict.fromkeys(MINIONS[:2], True), MINIONS[2]: "'shadow.set_password' is not available."}, MINIONS[2]),
    ],
    ids=["false", "no answer", "error"],
)
def test_a_minion_that_did_not_set_it_fails_the_step(fakes, secret, returns, failed):
    fakes.update(**state(returns))
    result = fakes.run("set-root-password.sh", str(secret), *MINIONS)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(f"root password: not set on {failed}")
    assert not secret.exists()
    assert PASSWORD not in result.stderr


def test_salt_failing_altogether_is_reported_with_its_reason(fakes, secret):
    fakes.update(**state(salt_error="Salt request timed out. The master is not responding."))
    result = fakes.run("set-root-password.sh", str(secret), *MINIONS)
    assert result.returncode == 1
    assert result.stderr == (
        f"root password: not set on {', '.join(MINIONS)} "
        "(salt: Salt request timed out. The master is not responding.)\n"
    )
    assert not secret.exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "expected a secret file and at least one minion id, got 0 arguments"),
        (["{secret}"], "expected a secret file and at least one minion id, got 1 arguments"),
        (["/nonexistent/root-password", MINIONS[0]], "SECRET_FILE /nonexistent/root-password does not exist"),
        (["{secret}", "Salt.Lab"], 'minion id "Salt.Lab" is not a lower-case DNS name'),
    ],
    ids=["nothing", "no minions", "no file", "bad id"],
)
def test_usage_errors_name_the_bad_argument(fakes, secret, arguments, message):
    result = fakes.run("set-root-password.sh", *(argument.format(secret=secret) for argument in arguments))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"set-root-password.sh: {message}",
        "usage: set-root-password.sh SECRET_FILE MINION_ID...",
    ]
    assert fakes.calls("salt") == []
