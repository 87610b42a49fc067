"""This process's egress policy: where its HTTP requests may go, checked as each connects.

The egress policy of this process (operator, CLI or evaluator Job) from its settings, the host
name resolution its checks need, the check of a new connection's peer that every HTTP stack's
transport applies (requests: metrics/requests_session.py, obstore: storage/checked_tunnel.py), and
an aiohttp session that checks what each name resolves to when it connects. The rules themselves
are pure: modelgate.api.addresses."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable, Mapping

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult

from modelgate.api.addresses import (
    ALLOW_LOOPBACK_ENV,
    AddressRefused,
    EgressPolicy,
    IPAddress,
    allowed_addresses,
)

# The chart's allowlist: addresses any Secret's bearer token may be sent to, besides those the
# Secret's own annotation names.
TOKEN_ADDRESSES_ENV = "MODELGATE_TOKEN_ADDRESSES"
# The API server's URL, which the operator passes to its evaluator Jobs (a Pod also has
# KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT).
API_SERVER_ENV = "MODELGATE_API_SERVER"


def policy_from_environment(api_server_urls: Iterable[str], environ: Mapping[str, str]) -> EgressPolicy:
    """This process's policy: loopback as the environment says, and the API server at every URL
    given, at $MODELGATE_API_SERVER and at the in-cluster Service address."""
    urls = [*api_server_urls, environ.get(API_SERVER_ENV, "")]
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    servers: set[tuple[IPAddress, int | None]] = set()
    if host:
        # The Service's address belongs to the API server on every port.
        servers.update((ip, None) for ip in resolve(host, int(port or 443)))
    for url in filter(None, urls):
        try:
            target = EgressPolicy(allow_loopback=True).check_url(url)
        except AddressRefused:
            continue
        servers.update((ip, target.port) for ip in resolve(target.host, target.port))
    return EgressPolicy(allow_loopback=loopback_allowed(environ), api_server=frozenset(servers))


def loopback_allowed(environ: Mapping[str, str]) -> bool:
    """$MODELGATE_ALLOW_LOOPBACK, which a command's --allow-loopback sets (modelgate.cli.loopback)."""
    return (environ.get(ALLOW_LOOPBACK_ENV) or "").strip().lower() in ("1", "true", "yes")


def evaluator_environment(api_server_url: str, environ: Mapping[str, str]) -> dict[str, str]:
    """What an evaluator Job needs to hold its URLs to this operator's policy."""
    loopback = {ALLOW_LOOPBACK_ENV: "true"} if loopback_allowed(environ) else {}
    return {API_SERVER_ENV: api_server_url, **loopback}


def token_allowlist(environ: Mapping[str, str]) -> tuple[str, ...]:
    return allowed_addresses(environ.get(TOKEN_ADDRESSES_ENV))


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address `host` resolves to; none when it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))


def resolve_checked(host: str, port: int, egress: EgressPolicy) -> list[IPAddress]:
    """Every address `host` resolves to now, each allowed by `egress`; AddressRefused otherwise."""
    addresses = resolve(host, port)
    egress.check_resolved(port, addresses)
    return addresses


def check_peer(sock: socket.socket, egress: EgressPolicy) -> None:
    """The one rule every HTTP stack's transport applies to a new connection: the address it
    reached must pass `egress`, or the socket is closed before anything is sent on it."""
    ip, port = sock.getpeername()[:2]
    try:
        egress.check_ip(str(ip).split("%")[0], int(port))
    except AddressRefused:
        sock.close()
        raise


class CheckedResolver(AbstractResolver):
    """The default resolver, refusing a name any of whose addresses the policy refuses."""

    def __init__(self, egress: EgressPolicy) -> None:
        self._egress = egress
        self._resolver = aiohttp.DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        resolved = await self._resolver.resolve(host, port, family)
        self._egress.check_resolved(port, [address["host"] for address in resolved])
        return resolved

    async def close(self) -> None:
        await self._resolver.close()


def checked_aiohttp_session(egress: EgressPolicy) -> aiohttp.ClientSession:
    """Names are checked as they resolve; an IP literal, which aiohttp connects to without asking
    the resolver, as each request starts: in the form yarl made of it (fullwidth digits and stops
    mapped to ASCII), whatever the caller checked before."""

    async def check_literal(
        _session: aiohttp.ClientSession, _context: object, request: aiohttp.TraceRequestStartParams
    ) -> None:
        egress.check_url(str(request.url))

    tracing = aiohttp.TraceConfig()
    tracing.on_request_start.append(check_literal)
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(resolver=CheckedResolver(egress)), trace_configs=[tracing]
    )
