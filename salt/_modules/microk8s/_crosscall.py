"""The one way the module calls the microk8s CLI: an argument list, a timeout, parsed failures."""

from __future__ import annotations

from salt.exceptions import CommandExecutionError

from . import _constants as constants
from ._ha import redact


def run(salt_functions: dict, *args: str, timeout: int = constants.DEFAULT_TIMEOUT) -> str:
    """
    Runs ``microk8s ARGS`` through ``cmd.run_all`` (never a shell string) and returns stdout.
    Raises CommandExecutionError with microk8s' own message on a non-zero exit. Join tokens are
    redacted from what Salt logs and from the error, since join and add-node carry them.
    """
    result = salt_functions["cmd.run_all"](
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
        raise CommandExecutionError(redact(f"microk8s {' '.join(args)} failed: {message}"))
    return result.get("stdout", "")
