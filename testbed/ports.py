"""Free TCP ports for the bed's listeners, safe when several beds start at once (pytest-xdist workers,
a demo beside a test run).

A port the kernel hands out for bind(0) comes from the ephemeral range, which outgoing connections
draw from too: between the probe and the listener's own bind, a client socket or another bed could
take it (seen: Prometheus failing with "address already in use" under three workers). Ports here come
from below the ephemeral range, and each is claimed with a file created exclusively, so two processes
of this machine never hand out the same one while the claim is fresh.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"
FIRST_PORT, END_PORT = 20000, 32768  # below Linux's default ephemeral range (32768-60999)
CLAIMS = Path(tempfile.gettempdir()) / "modelgate-port-claims"
CLAIM_LIFETIME = 3600.0  # a claim older than this is stale: its bed has long bound the port or gone
ATTEMPTS = 200


def free_port() -> int:
    CLAIMS.mkdir(exist_ok=True)
    for _ in range(ATTEMPTS):
        port = random.randrange(FIRST_PORT, END_PORT)
        if _claim(port) and bindable(port):
            return port
    raise RuntimeError(f"no free port in {FIRST_PORT}-{END_PORT - 1} after {ATTEMPTS} attempts ({CLAIMS})")


def _claim(port: int) -> bool:
    claim = CLAIMS / str(port)
    try:
        os.close(os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        try:
            stale = time.time() - claim.stat().st_mtime > CLAIM_LIFETIME
        except FileNotFoundError:
            return False
        if stale:
            claim.unlink(missing_ok=True)
        return False


def bindable(port: int, *, reuse_address: bool = False) -> bool:
    """Whether a listener could bind the port now. `reuse_address` as servers bind (Python's among
    them): the port's TIME_WAIT connections do not count, a listener still does."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, int(reuse_address))
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True
