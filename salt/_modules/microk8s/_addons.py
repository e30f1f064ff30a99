"""Addons: their status from the node's status, enabling and disabling them."""

from __future__ import annotations

from salt.exceptions import CommandExecutionError

from . import _cli, _status


def status_of(parsed: dict, name: str) -> str:
    """``enabled`` or ``disabled``; an addon microk8s does not know is an error, not "disabled"."""
    addon = parsed["addons"].get(name)
    if addon is None:
        raise CommandExecutionError(
            f"microk8s has no addon named {name!r} (known: {', '.join(sorted(parsed['addons']))})"
        )
    return str(addon["status"])


def enable_args(name: str, args: list[str] | None = None) -> list[str]:
    """``microk8s enable NAME[:ARG,...]``, the syntax addons with arguments take (e.g. dns:1.1.1.1)."""
    return ["enable", f"{name}:{','.join(args)}" if args else name]


def addons(salt: dict) -> dict:
    return _status.status(salt)["addons"]


def addon_status(salt: dict, name: str) -> str:
    return status_of(_status.status(salt), name)


def enable(salt: dict, name: str, args: list[str] | None = None) -> str:
    return _cli.run(salt, *enable_args(name, args))


def disable(salt: dict, name: str) -> str:
    return _cli.run(salt, "disable", name)
