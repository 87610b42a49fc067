"""A TCP listener on 127.0.0.1 that accepts nothing by itself: a test points a disguised address at
its port, then counts the connections that reached it (there must be none)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


@dataclass(frozen=True)
class Listener:
    port: int
    sock: socket.socket

    def connections(self) -> int:
        accepted = 0
        while True:
            try:
                self.sock.accept()[0].close()
            except BlockingIOError:
                return accepted
            accepted += 1


@pytest.fixture
def listener() -> Iterator[Listener]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.setblocking(False)
    yield Listener(sock.getsockname()[1], sock)
    sock.close()
