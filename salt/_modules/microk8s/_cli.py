"""
The one way the module runs the microk8s binary (the wiki's "crosscall"): an argument list, a
timeout, a structured error on failure, and join tokens kept out of logs and errors.
"""

from __future__ import annotations

import os
import re

from salt.exceptions import CommandExecutionError

from . import _constants as constants

# A join URL is <address>:<port>/<token>/<check>; a bare token is 32 or more hex characters.
_SECRET_IN_URL = re.compile(r"(:\d+/)[^\s/]+(/[^\s/'\"]*)?")
_BARE_TOKEN = re.compile(r"\b[0-9a-f]{32,}\b")
# Lines microk8s prints before the outcome (join.py's progress), never the reason of a failure.
_PROGRESS = re.compile(r"^(Contacting cluster at |Waiting for this node to finish joining)")


def redact(text: str) -> str:
    """``text`` with every join token replaced, for logs, errors and state comments."""
    return _BARE_TOKEN.sub("<token>", _SECRET_IN_URL.sub(r"\1<token>", text))


class Microk8sError(CommandExecutionError):
    """
    A microk8s command that exited non-zero: ``command`` (redacted), ``retcode`` and ``output``
    (stdout and stderr, redacted), so callers decide by exit code and whole output, never by
    the message. The message names the command, its exit code and the line that says why
    (``summary``).
    """

    def __init__(self, command: str, retcode: int, output: str):
        self.command = command
        self.retcode = retcode
        self.output = output
        super().__init__(f"{command} failed (exit {retcode}): {summary(output)}")

    def __reduce__(self):
        # Salt may copy an exception between processes: rebuild it from its fields, not its message.
        return (type(self), (self.command, self.retcode, self.output))


def summary(output: str) -> str:
    """
    The line of microk8s' output that says why it failed: the last line that is not progress
    (a Python traceback ends with its exception; join.py prints its reason last), else "no output".
    """
    lines = [line.strip() for line in output.splitlines() if line.strip() and not _PROGRESS.match(line.strip())]
    return lines[-1] if lines else "no output"


def run(
    salt: dict,
    *args: str,
    timeout: int = constants.DEFAULT_TIMEOUT,
    stdin: str | None = None,
    hide: tuple[str, ...] = (),
) -> str:
    """
    Runs ``microk8s ARGS`` through ``cmd.run_all`` of ``salt`` (the caller's ``__salt__``),
    never a shell string, and returns stdout. Raises Microk8sError on a non-zero exit. Join
    tokens are redacted from what Salt logs and from the error, since join and add-node carry them.

    ``stdin`` is written to the command's standard input (``kubectl apply -f -``), so a secret
    never lands on a command line or in a file; the call is then logged by Salt at no level at
    all (``output_loglevel="quiet"``: neither the command nor what it prints), and every string
    of ``hide`` is replaced in the error, in case kubectl quotes what it was given.
    """
    quiet = {"stdin": stdin, "output_loglevel": "quiet"} if stdin is not None else {}
    result = salt["cmd.run_all"](
        [constants.BINARY, *args],
        python_shell=False,
        timeout=timeout,
        ignore_retcode=True,
        log_callback=redact,
        **quiet,
    )
    retcode = result.get("retcode", 1)
    if retcode != 0:
        output = "\n".join(
            part.strip() for part in (result.get("stdout"), result.get("stderr")) if part and part.strip()
        )
        for text in (text for text in hide if text):
            output = output.replace(text, "<hidden>")
        raise Microk8sError(redact(f"microk8s {' '.join(args)}"), retcode, redact(output))
    return result.get("stdout", "")


def snap_path(salt: dict, relative: str) -> str:
    """A path below microk8s' $SNAP_DATA (the minion option ``microk8s.snap_data`` moves it)."""
    return os.path.join(salt["config.get"](constants.SNAP_DATA_OPTION, constants.SNAP_DATA), relative)
