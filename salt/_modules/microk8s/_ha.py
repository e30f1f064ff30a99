"""Join tokens and the join/leave protocol (see microk8s' add_token.py and join.py)."""

from __future__ import annotations

import json

import yaml

# microk8s' own error texts, recognised so the state module can retry or recover.
INVALID_TOKEN = "Invalid token"
ALREADY_KNOWN = "already known to dqlite"
NOT_RUNNING = "microk8s is not running"


def parse_add_node(text: str) -> dict:
    """``{"token": "<token>/<check>", "urls": ["ip:port/token/check", ...]}`` from --format json or yaml."""
    stripped = text.strip()
    data = json.loads(stripped) if stripped.startswith("{") else yaml.safe_load(stripped)
    return {"token": str(data["token"]), "urls": [str(u) for u in data.get("urls") or []]}


def join_args(url: str, worker: bool = False) -> list[str]:
    return ["join", url, *(["--worker"] if worker else [])]


def classify_error(message: str) -> str:
    """One of ``invalid-token``, ``already-known``, ``not-running`` or ``other``."""
    lowered = message.lower()
    if INVALID_TOKEN.lower() in lowered or "token is expired" in lowered:
        return "invalid-token"
    if ALREADY_KNOWN in lowered:
        return "already-known"
    if NOT_RUNNING in lowered:
        return "not-running"
    return "other"
