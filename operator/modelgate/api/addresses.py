"""Where the operator, its CLI and its evaluator Jobs may send a request, and where a Secret's
bearer token may go. Every address a tenant writes is checked here.

Pure: the IP addresses a host name resolves to, or that a connection reached, come from the
caller (modelgate.egress resolves them). Messages never repeat a URL: it may hold a password.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

# On a Secret: the addresses its token may be sent to, comma-separated origins, each optionally
# with a path prefix, e.g. "https://prometheus.monitoring:9090,https://mimir.example/prometheus".
ALLOWED_ADDRESSES_ANNOTATION = "modelgate.io/allowed-addresses"
# The one switch that lets tenants' URLs reach loopback addresses (a local bed, a port-forward): the
# commands' flag, or the process's setting (the operator passes it on to its evaluator Jobs).
ALLOW_LOOPBACK_FLAG = "--allow-loopback"
ALLOW_LOOPBACK_ENV = "MODELGATE_ALLOW_LOOPBACK"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Cloud metadata services outside 169.254.0.0/16: AWS's IPv6 one and Alibaba's.
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in ("fd00:ec2::254", "100.100.100.200"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
# What inet_aton reads as an IPv4 address: 1 to 4 parts, each decimal, octal (0...) or hex (0x...).
_NUMERIC_HOST = re.compile(r"[0-9][0-9a-fA-FxX]*(\.[0-9][0-9a-fA-FxX]*){0,3}")
# One part as C's strtoul(base 0) reads it whole.
_C_INTEGER = re.compile(r"0[xX](?P<hex>[0-9a-fA-F]+)|(?P<octal>0[0-7]*)|(?P<decimal>[1-9][0-9]*)")
_UINT32_MAX = 0xFFFFFFFF
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Refusal(StrEnum):
    """Why an address is refused: what the message says, and what tests compare."""

    NOT_HTTP = "is not an http:// or https:// URL with a host"
    USERINFO = "carries a user name or password (user:password@); put credentials in a Secret"
    FRAGMENT = "has a fragment (#...), which would cut off the path the client appends"
    LINK_LOCAL = "reaches a link-local address (169.254.0.0/16, fe80::/10: cloud metadata)"
    METADATA = "reaches a cloud metadata address"
    LOOPBACK = (
        f"reaches a loopback address (allowed only with {ALLOW_LOOPBACK_FLAG} or "
        f"{ALLOW_LOOPBACK_ENV}=true: a local bed, a port-forward)"
    )
    NOT_UNICAST = "reaches an unspecified, multicast or broadcast address"
    API_SERVER = "reaches the Kubernetes API server"
    UNRESOLVED = "names a host that does not resolve"


class AddressRefused(ValueError):
    def __init__(self, refusal: Refusal, ip: str | None = None) -> None:
        self.refusal = refusal
        self.ip = ip
        super().__init__(refusal.value if ip is None else f"{refusal.value}: {ip}")


@dataclass(frozen=True)
class Target:
    """An http(s) URL that passed the syntactic checks."""

    scheme: str
    host: str  # lower case, without brackets
    port: int
    path: str  # without a trailing slash

    @property
    def literal_ip(self) -> IPAddress | None:
        return literal_ip(self.host)

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


def parse_target(url: str) -> Target:
    """The URL's parts; raises AddressRefused for a URL that is not http(s), or carries userinfo
    or a fragment."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise AddressRefused(Refusal.NOT_HTTP) from None
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise AddressRefused(Refusal.NOT_HTTP)
    if "@" in parts.netloc:
        raise AddressRefused(Refusal.USERINFO)
    if "#" in url:
        raise AddressRefused(Refusal.FRAGMENT)
    return Target(
        parts.scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[parts.scheme], parts.path.rstrip("/")
    )


def literal_ip(host: str) -> IPAddress | None:
    """The IP address a host names by itself, in any form a resolver reads (2852039166, 0xa9fea9fe,
    0251.0376.0251.0376, [::ffff:169.254.169.254]); None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    return _inet_aton(host) if _NUMERIC_HOST.fullmatch(host) else None


def _inet_aton(host: str) -> ipaddress.IPv4Address | None:
    """What glibc's inet_aton reads (parsed here, as core and api open no socket): leading parts
    are one byte each, the last fills the bytes left ("127.1" is 127.0.0.1)."""
    parts = [_c_integer(part) for part in host.split(".")]
    if any(part is None for part in parts):
        return None
    *leading, last = (part for part in parts if part is not None)
    if any(part > 0xFF for part in leading) or last >= 1 << (8 * (4 - len(leading))):
        return None
    return ipaddress.IPv4Address(sum(part << (8 * (3 - n)) for n, part in enumerate(leading)) | last)


def _c_integer(text: str) -> int | None:
    match = _C_INTEGER.fullmatch(text)
    if match is None:
        return None
    if match["hex"]:
        value = int(match["hex"], 16)
    else:
        value = int(match["octal"], 8) if match["octal"] else int(match["decimal"])
    return value if value <= _UINT32_MAX else None


def _embedded_ipv4(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries to (mapped, 6to4, NAT64, IPv4-compatible)."""
    if isinstance(ip, ipaddress.IPv4Address):
        return ip
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


@dataclass(frozen=True)
class EgressPolicy:
    """Which IP addresses a tenant's URL may reach. `api_server`: the API server's addresses and
    ports (a port of None: every port of that address)."""

    allow_loopback: bool = False
    api_server: frozenset[tuple[IPAddress, int | None]] = frozenset()

    def refusal(self, ip: IPAddress, port: int) -> Refusal | None:
        """Why `ip`:`port` may not be reached, or None."""
        plain = _embedded_ipv4(ip)
        if any(
            plain == _embedded_ipv4(server) and served in (None, port) for server, served in self.api_server
        ):
            return Refusal.API_SERVER
        if plain.is_link_local:
            return Refusal.LINK_LOCAL
        if plain in METADATA_ADDRESSES or ip in METADATA_ADDRESSES:
            return Refusal.METADATA
        if plain.is_loopback or plain.is_unspecified:  # 0.0.0.0 reaches this host too
            return None if self.allow_loopback else Refusal.LOOPBACK
        if plain.is_multicast or plain == ipaddress.IPv4Address("255.255.255.255"):
            return Refusal.NOT_UNICAST
        return None

    def check_url(self, url: str) -> Target:
        """The URL's target when its syntax and a literal IP host pass; a host name is checked
        when it is resolved (`check_resolved`)."""
        target = parse_target(url)
        ip = target.literal_ip
        if ip is not None:
            self.check_ip(ip, target.port)
        return target

    def check_ip(self, ip: IPAddress | str, port: int) -> None:
        address = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
        refusal = self.refusal(address, port)
        if refusal is not None:
            raise AddressRefused(refusal, str(address))

    def check_resolved(self, port: int, ips: Iterable[IPAddress | str]) -> None:
        """A host name's addresses: every one must pass (a name that also resolves to a forbidden
        address is refused whole: which one a client connects to is not ours to choose)."""
        resolved = list(ips)
        if not resolved:
            raise AddressRefused(Refusal.UNRESOLVED)
        for ip in resolved:
            self.check_ip(ip, port)


def allowed_addresses(listed: str | None) -> tuple[str, ...]:
    """The addresses a comma- or space-separated list names (an annotation's or a setting's value)."""
    return tuple(entry for entry in re.split(r"[\s,]+", listed or "") if entry)


def token_may_go(address: str, allowed: Iterable[str]) -> bool:
    """Whether a token may be sent to `address`: one of `allowed` has its scheme, host and port,
    and its path is that entry's path or below it. An entry that is not a clean URL allows nothing."""
    try:
        target = parse_target(address)
    except AddressRefused:
        return False
    for entry in allowed:
        try:
            permitted = parse_target(entry)
        except AddressRefused:
            continue
        below = target.path == permitted.path or target.path.startswith(permitted.path + "/")
        if target.origin == permitted.origin and below:
            return True
    return False
