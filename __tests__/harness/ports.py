"""
Ports for the servers a test starts on the loopback, outside the kernel's ephemeral range.

A port probed with ``bind(("127.0.0.1", 0))`` and closed is one the kernel hands out again: until
the server that is to listen on it binds it (a Python process starting, long on a loaded
machine), any bind to port 0 anywhere on the machine may take it, and the server then fails with
EADDRINUSE. Neither a bind to port 0 nor a connect() ever takes a port below
``net.ipv4.ip_local_port_range``, so a port picked there at random and found free on every address
could still be lost to another test picking the same one before either server binds it, or be
picked twice for one server's two ports: so each port handed out is also reserved, machine-wide,
for ``RESERVED_FOR`` seconds (a file named by it under ``RESERVATIONS``), and not handed out again
in that while.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import time
from pathlib import Path

# Above the ports the suite's servers listen on in their own namespaces (the rehearsal's agents
# on 25000 are in theirs); the kernel's default range starts at 32768.
LOWEST = 26000
TRIES = 200
# Longer than any test's server lives (a Salt cluster, a whole module's); a run of the whole suite
# takes a few hundred of the thousands of ports.
RESERVED_FOR = 3600
RESERVATIONS = Path(tempfile.gettempdir()) / "koo-test-ports"


def ephemeral_range() -> tuple[int, int]:
    """net.ipv4.ip_local_port_range: the ports bind(0) and connect() choose from."""
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


def free_port() -> int:
    """A port free on every IPv4 address now, and one the kernel never hands out on its own."""
    below = ephemeral_range()[0]
    if below - LOWEST < 1000:
        raise RuntimeError(
            f"net.ipv4.ip_local_port_range starts at {below}: the tests need ports {LOWEST}-{LOWEST + 999}"
            " outside it (sysctl -w net.ipv4.ip_local_port_range='32768 60999')"
        )
    for _ in range(TRIES):
        port = random.randrange(LOWEST, below)
        with socket.socket() as probe:
            try:
                probe.bind(("0.0.0.0", port))
            except OSError:
                continue
        if _reserve(port):
            return port
    raise RuntimeError(f"no free port among {TRIES} tried in {LOWEST}-{below - 1}")


def _reserve(port: int) -> bool:
    """True when ``port`` was not reserved in the last RESERVED_FOR seconds, and is now."""
    RESERVATIONS.mkdir(exist_ok=True)
    reservation = RESERVATIONS / str(port)
    try:
        if time.time() - reservation.stat().st_mtime < RESERVED_FOR:
            return False
        # An expired reservation: taken over by whoever renames it away first.
        stale = reservation.with_name(f"{port}.{os.getpid()}.stale")
        reservation.rename(stale)
        stale.unlink()
    except FileNotFoundError:
        pass
    try:
        os.close(os.open(reservation, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True
