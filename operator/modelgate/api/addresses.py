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

import idna

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
# RFC 8215's local-use NAT64 block: a network picks its own prefix length in it (RFC 6052's 48, 56,
# 64 or 96 bits), so each place an IPv4 address may sit is judged, but for one in 0.0.0.0/8 ("this
# network", never a destination: the zeros of another layout).
_LOCAL_USE_NAT64 = ipaddress.ip_network("64:ff9b:1::/48")
_RFC6052_PREFIX_LENGTHS = (48, 56, 64, 96)
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
# What inet_aton reads as an IPv4 address: 1 to 4 parts, each decimal, octal (0...) or hex (0x...).
_NUMERIC_HOST = re.compile(r"[0-9][0-9a-fA-FxX]*(\.[0-9][0-9a-fA-FxX]*){0,3}")
# One part as C's strtoul(base 0) reads it whole.
_C_INTEGER = re.compile(r"0[xX](?P<hex>[0-9a-fA-F]+)|(?P<octal>0[0-7]*)|(?P<decimal>[1-9][0-9]*)")
_UINT32_MAX = 0xFFFFFFFF
_DEFAULT_PORTS = {"http": 80, "https": 443}
_BROADCAST = ipaddress.IPv4Address("255.255.255.255")


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
    NOT_IDNA = "names a host that is not a valid domain name (IDNA: empty, overlong or unmappable label)"


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
        parts.scheme, ascii_host(parts.hostname), port or _DEFAULT_PORTS[parts.scheme], parts.path.rstrip("/")
    )


def ascii_host(host: str) -> str:
    """The host as the HTTP clients send it on: a non-ASCII one mapped by UTS-46 as yarl (so
    aiohttp) and WHATWG parsers (obstore's) map it, so fullwidth digits and stops are an IP; a
    name's labels checked as getaddrinfo's idna codec checks them. Lower case; AddressRefused
    (NOT_IDNA) for a host no client could send."""
    if ":" in host:  # an IPv6 literal
        return host.lower()
    try:
        if not host.isascii():
            try:
                host = idna.encode(host, uts46=True).decode("ascii")
            except UnicodeError:  # yarl falls back on IDNA 2003 (nameprep) likewise
                host = host.encode("idna").decode("ascii")
        host.lower().encode("idna").decode("idna")
    except UnicodeError:
        raise AddressRefused(Refusal.NOT_IDNA) from None
    return host.lower()


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


def _reached(ip: IPAddress) -> tuple[IPAddress, ...]:
    """The addresses a connection to `ip` may reach: the IPv4 ones an IPv6 address carries to
    (mapped, 6to4, NAT64, IPv4-compatible), or else the address itself."""
    if isinstance(ip, ipaddress.IPv4Address):
        return (ip,)
    if ip.ipv4_mapped is not None:
        return (ip.ipv4_mapped,)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip in _NAT64 or (ip in _IPV4_COMPATIBLE and int(ip) > 1):
        return (ipaddress.IPv4Address(int(ip) & _UINT32_MAX),)
    if ip in _LOCAL_USE_NAT64:
        carried = {_rfc6052_ipv4(ip, length) for length in _RFC6052_PREFIX_LENGTHS}
        return tuple(plain for plain in carried if plain not in _THIS_NETWORK) or (ip,)
    return (ip,)


def _rfc6052_ipv4(ip: ipaddress.IPv6Address, prefix_length: int) -> ipaddress.IPv4Address:
    """The IPv4 address RFC 6052 places after a prefix of `prefix_length` bits, skipping bits
    64-71 (the "u" octet)."""
    whole = int(ip)
    if prefix_length == 96:
        return ipaddress.IPv4Address(whole & _UINT32_MAX)
    without_u = (whole >> 64 << 56) | (whole & ((1 << 56) - 1))  # 120 bits
    return ipaddress.IPv4Address(without_u >> (88 - prefix_length) & _UINT32_MAX)


@dataclass(frozen=True)
class EgressPolicy:
    """Which IP addresses a tenant's URL may reach. `api_server`: the API server's addresses and
    ports (a port of None: every port of that address)."""

    allow_loopback: bool = False
    api_server: frozenset[tuple[IPAddress, int | None]] = frozenset()

    def refusal(self, ip: IPAddress, port: int) -> Refusal | None:
        """Why `ip`:`port` may not be reached, or None."""
        reached = _reached(ip)
        servers = {(plain, served) for server, served in self.api_server for plain in _reached(server)}
        if any((plain, None) in servers or (plain, port) in servers for plain in reached):
            return Refusal.API_SERVER
        if any(plain.is_link_local for plain in reached):
            return Refusal.LINK_LOCAL
        if ip in METADATA_ADDRESSES or any(plain in METADATA_ADDRESSES for plain in reached):
            return Refusal.METADATA
        # 0.0.0.0 reaches this host too
        if any(plain.is_loopback or plain.is_unspecified for plain in reached) and not self.allow_loopback:
            return Refusal.LOOPBACK
        if any(plain.is_multicast or plain == _BROADCAST for plain in reached):
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
