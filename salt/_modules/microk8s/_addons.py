"""Addon lookups over a parsed status."""

from __future__ import annotations

from salt.exceptions import CommandExecutionError


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
