"""
The one way the module runs the microk8s binary (the wiki's "crosscall"): an argument list, a
timeout, microk8s' own message on failure, and join tokens kept out of logs and errors.
"""

from __future__ import annotations

import os
import re

from salt.exceptions import CommandExecutionError

from . import _constants as constants

# A join URL is <address>:<port>/<token>/<check>; a bare token is 32 or more hex characters.
_SECRET_IN_URL = re.compile(r"(:\d+/)[^\s/]+(/[^\s/'\"]*)?")
_BARE_TOKEN = re.compile(r"\b[0-9a-f]{32,}\b")
# What separates the command from microk8s' output in the errors run() raises.
_FAILED = " failed: "


def redact(text: str) -> str:
    """``text`` with every join token replaced, for logs, errors and state comments."""
    return _BARE_TOKEN.sub("<token>", _SECRET_IN_URL.sub(r"\1<token>", text))


def run(salt: dict, *args: str, timeout: int = constants.DEFAULT_TIMEOUT) -> str:
    """
    Runs ``microk8s ARGS`` through ``cmd.run_all`` of ``salt`` (the caller's ``__salt__``),
    never a shell string, and returns stdout. Raises CommandExecutionError with microk8s' own
    message on a non-zero exit. Join tokens are redacted from what Salt logs and from the error,
    since join and add-node carry them.
    """
    result = salt["cmd.run_all"](
        [constants.BINARY, *args],
        python_shell=False,
        timeout=timeout,
        ignore_retcode=True,
        log_callback=redact,
    )
    if result.get("retcode", 1) != 0:
        message = "\n".join(
            part.strip() for part in (result.get("stdout"), result.get("stderr")) if part and part.strip()
        )
        raise CommandExecutionError(redact(f"microk8s {' '.join(args)}{_FAILED}{message}"))
    return result.get("stdout", "")


def output_of(error: CommandExecutionError) -> str:
    """What microk8s printed, from an error run() raised."""
    return str(error).split(_FAILED, 1)[-1]


def snap_path(salt: dict, relative: str) -> str:
    """A path below microk8s' $SNAP_DATA (the minion option ``microk8s.snap_data`` moves it)."""
    return os.path.join(salt["config.get"](constants.SNAP_DATA_OPTION, constants.SNAP_DATA), relative)
