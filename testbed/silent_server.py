"""A hostile "Prometheus" on 127.0.0.1: it accepts connections and never answers them, or answers a
status line and then trickles a header byte every few seconds, never finishing. What a tenant who
points prometheus.address at a server of their own can do to the operator's threads.

In a test's own process: `with SilentServer.in_thread() as server: server.address`. As a process,
ended by its pid: `with SilentServer.in_process() as server: ...` (`python -m testbed.silent_server`)."""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

from testbed.ports import free_port
from testbed.processes import python_module_env
from testbed.waiting import wait_for


def serve(listener: socket.socket, trickle: float | None, stop: threading.Event) -> None:
    """Accepts until `stop`; keeps every connection open (so that the client waits) and, with
    `trickle`, sends it a never-ending response one byte each `trickle` seconds."""
    held: list[socket.socket] = []
    listener.settimeout(0.2)
    sent_at = 0.0
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            connection, _ = listener.accept()
            if trickle is not None:
                connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            held.append(connection)
        if trickle is not None and time.monotonic() - sent_at >= trickle:
            sent_at = time.monotonic()
            for connection in list(held):
                try:
                    connection.send(b"x")
                except OSError:
                    held.remove(connection)
    for connection in held:
        connection.close()


def _listen(port: int = 0) -> socket.socket:
    return socket.create_server(("127.0.0.1", port), backlog=1024)


class SilentServer:
    def __init__(self, port: int) -> None:
        self.port = port
        self.address = f"http://127.0.0.1:{port}"

    @classmethod
    @contextlib.contextmanager
    def in_thread(cls, trickle: float | None = None) -> Iterator[SilentServer]:
        listener = _listen()
        stop = threading.Event()
        thread = threading.Thread(target=serve, args=(listener, trickle, stop), daemon=True)
        thread.start()
        try:
            yield cls(listener.getsockname()[1])
        finally:
            stop.set()
            thread.join()
            listener.close()

    @classmethod
    @contextlib.contextmanager
    def in_process(cls, trickle: float | None = None) -> Iterator[SilentServer]:
        port = free_port()
        args = [sys.executable, "-m", "testbed.silent_server", f"--port={port}"]
        if trickle is not None:
            args.append(f"--trickle={trickle}")
        env = {**os.environ, **python_module_env()}
        process = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL)
        try:
            wait_for(lambda: _accepts(port), timeout=30, what=f"the silent server on port {port}")
            yield cls(port)
        finally:
            process.terminate()  # by its pid: the one this started
            process.wait(timeout=10)


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--trickle", type=float, help="send a byte of a response every SECONDS")
    args = parser.parse_args()
    serve(_listen(args.port), args.trickle, threading.Event())


if __name__ == "__main__":
    main()
