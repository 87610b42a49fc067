"""The proxy's listening sockets, guarded against clients that hold connections.

The proxy's listening sockets, guarded against clients that hold connections: at most
`max_connections` at once (the next are answered 503 and closed), a request's headers complete
within `header_timeout` of its first byte (of connecting, for a connection's first request; the
client is answered 408 and closed otherwise), and an idle keep-alive connection closed after
`idle_timeout` (aiohttp's keep-alive timeout, which also ends a connection whose next request has
not begun).

aiohttp's server has no header timeout and no connection limit: each accepted connection's
protocol (aiohttp's request handler) is wrapped in a `GuardedConnection`, which sees every byte
before it, and the application's middleware tells it when a request's headers were complete (its
handler runs) and when its answer was done."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

import structlog
from aiohttp import web
from yarl import URL

log = structlog.get_logger(__name__)
# How long a connection answered 503 or 408 stays open, reading and dropping, after its answer.
LINGER = timedelta(seconds=2)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 256
    header_timeout: float = 15.0
    idle_timeout: float = 120.0


class ConnectionGuard:
    """The open connections of one listening port and the limits they are held to."""

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.open: dict[asyncio.BaseTransport, GuardedConnection] = {}

    @web.middleware
    async def track(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Headers are complete once a handler runs: no header deadline until its answer is done."""
        connection = self.open.get(request.transport) if request.transport is not None else None
        if connection is not None:
            connection.busy = True
            connection.disarm()
        try:
            return await handler(request)
        finally:
            if connection is not None:
                connection.busy = False


class GuardedConnection(asyncio.Protocol):
    """One accepted connection: refused when the port is full, cut off when a request's headers
    take too long; everything else is passed to aiohttp's request handler."""

    def __init__(self, guard: ConnectionGuard, handler: asyncio.Protocol) -> None:
        self._guard = guard
        self._handler = handler
        self._transport: asyncio.Transport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._refused = False  # never handed to aiohttp
        self._cut_off = False  # handed to aiohttp, then answered 408: what the client still sends is dropped
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        if len(self._guard.open) >= self._guard.limits.max_connections:
            self._refused = True
            log.warning("connection refused: too many open", limit=self._guard.limits.max_connections)
            _answer_and_close(transport, "503 Service Unavailable", "Retry-After: 1\r\n")
            return
        self._guard.open[transport] = self
        self._arm()
        self._handler.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self._refused or self._cut_off:
            return
        if not self.busy and self._deadline is None:
            self._arm()  # the first bytes of a connection's next request
        self._handler.data_received(data)

    def eof_received(self) -> bool | None:
        return None if self._refused else self._handler.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self.disarm()
        if self._transport is not None:
            self._guard.open.pop(self._transport, None)
        self._handler.connection_lost(exc)

    def pause_writing(self) -> None:
        self._handler.pause_writing()

    def resume_writing(self) -> None:
        self._handler.resume_writing()

    def disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _arm(self) -> None:
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(self._guard.limits.header_timeout, self._headers_too_slow)

    def _headers_too_slow(self) -> None:
        self._deadline = None
        if self._transport is not None and not self.busy:
            log.warning(
                "connection closed: request headers too slow", timeout=self._guard.limits.header_timeout
            )
            self._cut_off = True
            _answer_and_close(self._transport, "408 Request Timeout", "")


def _answer_and_close(transport: asyncio.Transport, status: str, headers: str) -> None:
    """Answers, ends the write side, and closes the socket LINGER later: closed at once with the
    client's bytes still arriving, the kernel resets the connection, and the client may lose the
    answer it has not read yet (seen under load)."""
    transport.write(f"HTTP/1.1 {status}\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n".encode())
    if transport.can_write_eof():
        transport.write_eof()
    asyncio.get_running_loop().call_later(LINGER.total_seconds(), transport.close)


class GuardedSite(web.BaseSite):
    """A TCP site whose connections are guarded by `guard` (whose `track` must be among the
    application's middlewares)."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int, guard: ConnectionGuard) -> None:
        super().__init__(runner)
        self._host = host
        self._port = port
        self._guard = guard

    @property
    def name(self) -> str:
        return str(URL.build(scheme="http", host=self._host, port=self._port))

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None, "the runner has not been set up"
        guard = self._guard
        self._server = await asyncio.get_running_loop().create_server(
            lambda: GuardedConnection(guard, server()), self._host, self._port, reuse_address=True
        )
