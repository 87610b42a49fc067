"""A notification receiver on 127.0.0.1 (a webhook, Slack or MS Teams endpoint as the operator sees
it): it records every request with its Idempotency-Key and JSON body and answers `status`, after
answering 500 to the first `fail_first` requests of each key; with `hold_first`, it holds the first
request of each key `hold_seconds` and closes it unanswered (a sender that dies meanwhile never
hears back). For a receiver that never answers at all, see testbed/silent_server.py.

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
    status: int  # what the receiver answered; 0: nothing (held)
    at: float  # time.time()


class NotificationReceiver:
    def __init__(
        self, server: ThreadingHTTPServer, status: int, fail_first: int, hold_first: bool, hold_seconds: float
    ) -> None:
        self.url = f"http://127.0.0.1:{server.server_address[1]}/hook/secret-token"
        self._status = status
        self._fail_first = fail_first
        self.hold_first = hold_first
        self.hold_seconds = hold_seconds
        self._lock = threading.Lock()
        self._received: list[Received] = []

    @classmethod
    @contextlib.contextmanager
    def in_thread(
        cls, status: int = 200, fail_first: int = 0, hold_first: bool = False, hold_seconds: float = 30
    ) -> Iterator[NotificationReceiver]:
        receiver: NotificationReceiver | None = None

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                assert receiver is not None
                length = int(self.headers.get("Content-Length") or 0)
                key = self.headers.get("Idempotency-Key") or ""
                if receiver.hold_first and key not in receiver.requests_per_key():
                    receiver.record(key, self.rfile.read(length), held=True)
                    time.sleep(receiver.hold_seconds)
                    self.close_connection = True
                    return
                answer = receiver.record(key, self.rfile.read(length))
                self.send_response(answer)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        receiver = cls(server, status, fail_first, hold_first, hold_seconds)
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        try:
            yield receiver
        finally:
            server.shutdown()
            server.server_close()
            thread.join()

    def record(self, key: str, raw: bytes, *, held: bool = False) -> int:
        """Records a request; what to answer it (0: held, never answered)."""
        with self._lock:
            earlier = sum(1 for r in self._received if r.key == key)
            status = 0 if held else 500 if earlier < self._fail_first else self._status
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
