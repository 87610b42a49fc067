"""obstore's transport to an https store: a CONNECT proxy on 127.0.0.1 that obstore is given as its
proxy. obstore's HTTP client (reqwest, in Rust) resolves names itself, beyond this process's reach,
so a name checked before could resolve elsewhere when it connects (DNS rebinding). Through the
tunnel it resolves nothing: the tunnel resolves the store's name at each new connection, holds every
address to the egress policy, connects to a checked one and checks the connection's peer too
(modelgate.egress.check_peer, the rule the other HTTP stacks apply). TLS stays end to end: obstore
verifies the store's certificate against its host name inside the tunnel. The tunnel goes to the
store's host and port and nowhere else."""

from __future__ import annotations

import selectors
import socket
import socketserver
import threading

from modelgate.api.addresses import AddressRefused, EgressPolicy
from modelgate.egress import check_peer, resolve_checked

_MAX_HEAD_LINES = 64
_MAX_LINE = 8192
_CHUNK = 64 * 1024


class CheckedTunnel:
    """Tunnels to `host`:`port`, each connection to an address `egress` allows at that moment.
    `refused`: the last refusal, for the store to tell apart from an unreachable endpoint."""

    def __init__(self, host: str, port: int, egress: EgressPolicy, connect_timeout: float) -> None:
        self._host, self._port = host, port
        self._egress = egress
        self._connect_timeout = connect_timeout
        self.refused: AddressRefused | None = None
        self._server = _TunnelServer(self)
        # A short poll: close() (at the store's collection or the process's exit) waits for it.
        serve = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="storage-tunnel",
            daemon=True,
        )
        serve.start()

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def serves(self, authority: str) -> bool:
        host, _, port = authority.rpartition(":")
        return host.strip("[]").lower() == self._host and port == str(self._port)

    def connect(self) -> socket.socket:
        """A connection to the store at an address checked for it; AddressRefused or OSError."""
        try:
            return self._connect_checked()
        except AddressRefused as refused:
            self.refused = refused
            raise

    def _connect_checked(self) -> socket.socket:
        error: OSError = OSError("no address")
        for address in resolve_checked(self._host, self._port, self._egress):
            try:
                sock = socket.create_connection((str(address), self._port), self._connect_timeout)
            except OSError as failed:
                error = failed
                continue
            check_peer(sock, self._egress)
            sock.settimeout(None)
            return sock
        raise error


class _TunnelServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, tunnel: CheckedTunnel) -> None:
        self.tunnel = tunnel
        super().__init__(("127.0.0.1", 0), _TunnelHandler)


class _TunnelHandler(socketserver.StreamRequestHandler):
    rbufsize = 0  # nothing past the request's head is read into a buffer the pipe would miss
    server: _TunnelServer

    def handle(self) -> None:
        tunnel = self.server.tunnel
        request = self.rfile.readline(_MAX_LINE).decode("latin-1").split()
        for _ in range(_MAX_HEAD_LINES):
            if self.rfile.readline(_MAX_LINE) in (b"\r\n", b"\n", b""):
                break
        if len(request) != 3 or request[0] != "CONNECT" or not tunnel.serves(request[1]):
            self._answer(403, "Forbidden")
            return
        try:
            upstream = tunnel.connect()
        except AddressRefused:
            self._answer(403, "Forbidden")
            return
        except OSError:
            self._answer(502, "Bad Gateway")
            return
        with upstream:
            self._answer(200, "Connection Established")
            _pipe(self.connection, upstream)

    def _answer(self, status: int, reason: str) -> None:
        self.wfile.write(f"HTTP/1.1 {status} {reason}\r\n\r\n".encode())


def _pipe(client: socket.socket, upstream: socket.socket) -> None:
    """Copies bytes both ways until either side closes."""
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ, upstream)
        selector.register(upstream, selectors.EVENT_READ, client)
        while True:
            for key, _ in selector.select():
                source: socket.socket = key.fileobj  # type: ignore[assignment]
                try:
                    data = source.recv(_CHUNK)
                    if not data:
                        return
                    key.data.sendall(data)
                except OSError:
                    return
