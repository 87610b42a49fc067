"""A server on 127.0.0.1 whose every answer tells what must never be repeated: a marker that stands
for a secret and an inner URL, in its body (or, not speaking HTTP, in place of a status line). The
tests of error messages look for the marker and the server's own address in what was shown."""

from __future__ import annotations

import contextlib
import socketserver
import threading
from collections.abc import Iterator

MARKER = "sEcReT-MARKER-7f3a"
TOLD = f"<Error><Message>{MARKER} at http://inner.internal:8080/admin</Message></Error>"


@contextlib.contextmanager
def telling_server(status: int | None) -> Iterator[str]:
    """Its URL; each request answered with `status` and TOLD as the body, or with status None,
    TOLD alone (a reply that is not HTTP)."""
    head = b"" if status is None else f"HTTP/1.1 {status} Whatever\r\n".encode()

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            length = 0
            while (line := self.rfile.readline(8192)) not in (b"\r\n", b"\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.rfile.read(length)
            body = TOLD.encode()
            framing = f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() if head else b""
            self.wfile.write(head + framing + body + (b"" if head else b"\r\n\r\n"))

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
