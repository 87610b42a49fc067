"""A notification receiver on 127.0.0.1 (a webhook, Slack or MS Teams endpoint as the operator sees
it): it records every request with its Idempotency-Key and JSON body and answers `status`, after
answering 500 to the first `fail_first` requests of each key. For a receiver that never answers, see
testbed/silent_server.py.

In a test's own process: `with NotificationReceiver.in_thread(fail_first=3) as receiver: receiver.url`."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    key: str
    body: Any
    status: int  # what the receiver answered
    at: float  # time.time()


class NotificationReceiver:
    def __init__(self, server: ThreadingHTTPServer, status: int, fail_first: int) -> None:
        self.url = f"http://127.0.0.1:{server.server_address[1]}/hook/secret-token"
        self._status = status
        self._fail_first = fail_first
        self._lock = threading.Lock()
        self._received: list[Received] = []

    @classmethod
    @contextlib.contextmanager
    def in_thread(cls, status: int = 200, fail_first: int = 0) -> Iterator[NotificationReceiver]:
        receiver: NotificationReceiver | None = None

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                assert receiver is not None
                length = int(self.headers.get("Content-Length") or 0)
                answer = receiver.record(self.headers.get("Idempotency-Key") or "", self.rfile.read(length))
                self.send_response(answer)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        receiver = cls(server, status, fail_first)
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            yield receiver
        finally:
            server.shutdown()
            server.server_close()
            thread.join()

    def record(self, key: str, raw: bytes) -> int:
        with self._lock:
            earlier = sum(1 for r in self._received if r.key == key)
            status = 500 if earlier < self._fail_first else self._status
            self._received.append(Received(key, json.loads(raw or b"null"), status, time.time()))
            return status

    def received(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def taken(self) -> dict[str, Received]:
        """The request each key was taken with (answered 2xx), by key."""
        return {r.key: r for r in self.received() if 200 <= r.status < 300}

    def requests_per_key(self) -> Counter[str]:
        return Counter(r.key for r in self.received())
