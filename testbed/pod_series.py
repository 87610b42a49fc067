"""The request counters of many Pods from one listener, for benchmarks with hundreds of rollouts.

A model-server double per Pod (testbed/fleet.py) serves real traffic, but a thousand of them do not
fit on a 2-core machine. This exports what those doubles would, `http_requests_total` by `status`,
with each Pod's `namespace` and `pod` labels in the exposition (the bed's scrape config honours
them), at a fixed request rate and error share per Pod. Counters grow with elapsed time, so every
scrape sees `rate()` and `increase()` as a real server at that traffic would give them.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from testbed.components import LOOPBACK

EXPOSITION = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class PodTraffic:
    namespace: str
    pod: str
    requests_per_second: float
    error_share: float  # of the requests, answered with HTTP 500


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # Prometheus gives up on a scrape after its timeout (1 s on the bed) and closes the
        # connection; the next scrape comes a second later. Anything else is reported as usual.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


class PodSeries:
    """A scrape target for the series of many Pods; `serve()` starts it on 127.0.0.1."""

    def __init__(self) -> None:
        self._pods: dict[tuple[str, str], tuple[PodTraffic, float]] = {}  # -> (traffic, since)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def add(self, pods: list[PodTraffic]) -> None:
        now = time.monotonic()
        with self._lock:
            for pod in pods:
                self._pods[pod.namespace, pod.pod] = (pod, now)

    def exposition(self) -> str:
        now = time.monotonic()
        with self._lock:
            pods = list(self._pods.values())
        lines = ["# TYPE http_requests_total counter"]
        for traffic, since in pods:
            served = traffic.requests_per_second * (now - since)
            labels = f'namespace="{traffic.namespace}",pod="{traffic.pod}",container="server"'
            lines.append(f'http_requests_total{{{labels},status="200"}} {served * (1 - traffic.error_share)}')
            lines.append(f'http_requests_total{{{labels},status="500"}} {served * traffic.error_share}')
        return "\n".join(lines) + "\n"

    def serve(self) -> str:
        """Starts serving the exposition (at any path) in a daemon thread; returns HOST:PORT."""
        series = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = series.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", EXPOSITION)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # one line per scrape would flood the benchmark's output

        self._server = _Server((LOOPBACK, 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"{LOOPBACK}:{self._server.server_port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
