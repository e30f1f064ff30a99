"""
Join tokens, in $SNAP_DATA/credentials/cluster-tokens.txt (layout.TOKENS):
- ``microk8s add-node`` (scripts/wrappers/add_token.py): a 32-character token (``--token``, else
  a random one), written as ``<token>`` when single-use (``--token-ttl -1``, the default) and as
  ``<token>|<expiry>`` otherwise; the join URL's last part is the server certificate's check
  (server_cert.check);
- the cluster agent's ConsumeClusterToken (microk8s-cluster-agent pkg/snap/snap.go), the first
  thing it does with a join: a token is valid while listed and unexpired, and a single-use one is
  removed at once, so a join that then fails has spent it.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path


def issue(path: Path, args: list[str]) -> str:
    """add_token.py: the token of ``add-node ARGS``, appended to the tokens file at ``path``."""
    ttl = int(args[args.index("--token-ttl") + 1]) if "--token-ttl" in args else -1
    token = args[args.index("--token") + 1] if "--token" in args else secrets.token_hex(16)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as tokens:
        tokens.write(f"{token}|{int(time.time()) + ttl}\n" if ttl != -1 else f"{token}\n")
    return token


def consume(path: Path, token: str) -> bool:
    """ConsumeClusterToken: whether ``token`` is listed and unexpired; a single-use one is removed."""
    lines = path.read_text().splitlines() if path.exists() else []
    for line in lines:
        listed, _, expiry = line.partition("|")
        if listed != token:
            continue
        if expiry:
            return int(expiry) > time.time()
        path.write_text("".join(f"{kept}\n" for kept in lines if kept != line))
        return True
    return False
