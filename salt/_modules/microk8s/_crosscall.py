"""The one way the module calls the microk8s CLI: an argument list, a timeout, parsed failures."""

from __future__ import annotations

from salt.exceptions import CommandExecutionError

from . import _constants as constants


def run(salt_functions: dict, *args: str, timeout: int = constants.DEFAULT_TIMEOUT) -> str:
    """
    Runs ``microk8s ARGS`` through ``cmd.run_all`` (never a shell string) and returns stdout.
    Raises CommandExecutionError with microk8s' own message on a non-zero exit.
    """
    result = salt_functions["cmd.run_all"](
        [constants.BINARY, *args], python_shell=False, timeout=timeout, ignore_retcode=True
    )
    if result.get("retcode", 1) != 0:
        message = (result.get("stderr") or result.get("stdout") or "").strip()
        raise CommandExecutionError(f"microk8s {' '.join(args)} failed: {message}", info=result)
    return result.get("stdout", "")
