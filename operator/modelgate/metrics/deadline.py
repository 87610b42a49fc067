"""A deadline that HTTP requests cannot outlive. A request's timeout bounds each wait for data, not
the request: a server that sends a byte every few seconds holds the calling thread for as long as it
likes. Inside `Deadline`, every connection of this thread that is a `WatchedHTTPConnection` (or its
HTTPS twin; metrics/requests_session.py makes its sessions' connections so) is shut down when the
deadline passes, which ends the request at once with a connection error."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType
from typing import Any

from urllib3.connection import HTTPConnection, HTTPSConnection

_current = threading.local()


class Deadline:
    """`with Deadline(seconds) as deadline:` the requests made in the block end by the deadline."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._ends = time.monotonic() + seconds
        self._connections: list[HTTPConnection] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._shut)
        self._timer.daemon = True
        self.passed = False

    def remaining(self) -> float:
        return max(self._ends - time.monotonic(), 0.0)

    def __enter__(self) -> Deadline:
        _current.deadline = self
        self._timer.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._timer.cancel()
        _current.deadline = None

    def watch(self, connection: HTTPConnection) -> None:
        with self._lock:
            self._connections.append(connection)
            shut = self.passed
        if shut:
            _shut_down(connection)

    def _shut(self) -> None:
        with self._lock:
            self.passed = True
            connections = list(self._connections)
        for connection in connections:
            _shut_down(connection)


def _shut_down(connection: HTTPConnection) -> None:
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed
            sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked reading it; close() would not


def _watch(connection: HTTPConnection) -> None:
    deadline: Deadline | None = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.watch(connection)


class WatchedHTTPConnection(HTTPConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(self)
        super().request(*args, **kwargs)


class WatchedHTTPSConnection(HTTPSConnection):
    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(self)
        super().request(*args, **kwargs)
