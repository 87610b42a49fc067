"""Object storage connects only to an address checked for that connection: a name that resolves to
an allowed address when checked and to loopback when obstore connects (DNS rebinding) reaches
nothing, and an https store is reached through the CheckedTunnel, TLS still naming the host."""

from __future__ import annotations

import asyncio
import select
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from modelgate.api.addresses import EgressPolicy, Refusal
from modelgate.storage import ObjectStore, StorageCredentials, StorageError, StorageProblem, parse_object_url
from modelgate.storage.checked_tunnel import CheckedTunnel
from tests.support.storage import SECRET

URL = parse_object_url("s3://sets/team-a/qa.jsonl")
PUBLIC = "192.0.2.10"  # what the name resolves to when it is checked: an address the policy allows


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on 127.0.0.1 that accepts nothing by itself: the test asks what reached it."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server


def reached(server: socket.socket, wait: float = 0.5) -> bytes | None:
    """The first bytes of a connection that reached `server` within `wait` seconds, or None."""
    readable, _, _ = select.select([server], [], [], wait)
    if not readable:
        return None
    connection, _ = server.accept()
    with connection:
        connection.settimeout(5)
        return connection.recv(4096)


def rebinding(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """`name` resolves to PUBLIC the first time and to 127.0.0.1 after; the answers given."""
    real = socket.getaddrinfo
    answers: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != name:
            return real(host, port, *args, **kwargs)
        answers.append(PUBLIC if not answers else "127.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (answers[-1], int(port)))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers


def store(endpoint: str, egress: EgressPolicy) -> ObjectStore:
    return ObjectStore(StorageCredentials(endpoint, "us-east-1", "AKIAEXAMPLE", SECRET), egress)


def test_a_name_rebound_to_loopback_after_its_check_reaches_nothing(
    monkeypatch: pytest.MonkeyPatch, listener: socket.socket
) -> None:
    """`localhost` is a name obstore's own resolver turns into 127.0.0.1: without the tunnel, the
    store connected to the listener after the check had seen only PUBLIC."""
    answers = rebinding(monkeypatch, "localhost")
    port = listener.getsockname()[1]
    with pytest.raises(StorageError) as raised:
        asyncio.run(store(f"https://localhost:{port}", EgressPolicy()).read(URL))
    assert reached(listener) is None
    assert raised.value.problem is StorageProblem.REFUSED
    assert Refusal.LOOPBACK.value in str(raised.value)
    assert answers[0] == PUBLIC and "127.0.0.1" in answers


def test_an_https_store_is_reached_through_the_tunnel_with_tls_naming_the_host(
    listener: socket.socket,
) -> None:
    """What reaches the store's address is obstore's TLS handshake, asking for the host by name
    (its server_name), so the certificate is still verified against the host."""
    port = listener.getsockname()[1]
    reading = store(f"https://localhost:{port}", EgressPolicy(allow_loopback=True)).read(URL)

    async def read_and_watch() -> bytes | None:
        task = asyncio.ensure_future(reading)
        first = await asyncio.to_thread(reached, listener, 10.0)
        listener.close()  # obstore's retries find nothing listening and give up at once
        with pytest.raises(StorageError):
            await task
        return first

    hello = asyncio.run(read_and_watch())
    assert hello is not None and hello[0] == 0x16  # a TLS handshake record
    assert b"localhost" in hello


def test_the_tunnel_goes_to_the_store_only(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    tunnel = CheckedTunnel("localhost", port, EgressPolicy(allow_loopback=True), connect_timeout=2)
    try:
        for authority in (f"169.254.169.254:{port}", f"localhost:{port + 1}", f"127.0.0.1:{port}"):
            assert connect_answer(tunnel, authority).startswith(b"HTTP/1.1 403")
        assert reached(listener, wait=0.2) is None
        with socket.create_connection(("127.0.0.1", int(tunnel.proxy_url.rsplit(":", 1)[1]))) as client:
            client.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode())
            assert client.recv(1024).startswith(b"HTTP/1.1 200")
            client.sendall(b"bytes for the store")
            assert reached(listener) == b"bytes for the store"
    finally:
        tunnel.close()


def connect_answer(tunnel: CheckedTunnel, authority: str) -> bytes:
    with socket.create_connection(("127.0.0.1", int(tunnel.proxy_url.rsplit(":", 1)[1]))) as client:
        client.settimeout(5)
        client.sendall(f"CONNECT {authority} HTTP/1.1\r\n\r\n".encode())
        return client.recv(1024)
