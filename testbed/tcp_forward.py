"""A TCP forward from a fixed loopback port to a listener of the bed, from a thread of its own: the
playground's Prometheus at the address its examples name, whichever port the bed gave it."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from testbed.components import LOOPBACK

CHUNK = 65536


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
    writer.close()


class TcpForward:
    """Listens on 127.0.0.1:`port` and connects each client to 127.0.0.1:`target_port`."""

    def __init__(self, port: int, target_port: int) -> None:
        self.port = port
        self.target_port = target_port
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="tcp-forward", daemon=True)

    def __enter__(self) -> TcpForward:
        # Bound here, in the caller's thread: a port in use fails the start, not a background thread.
        self._server = self._loop.run_until_complete(asyncio.start_server(self._connect, LOOPBACK, self.port))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        server = self._server
        if server is not None:
            asyncio.run_coroutine_threadsafe(_closed(server), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _connect(
        self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        try:
            target_reader, target_writer = await asyncio.open_connection(LOOPBACK, self.target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, target_writer), _pipe(target_reader, client_writer))


async def _closed(server: asyncio.Server) -> None:
    """The listener closed, and every open connection with it."""
    server.close()
    await server.wait_closed()
    connections = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in connections:
        task.cancel()
    await asyncio.gather(*connections, return_exceptions=True)
