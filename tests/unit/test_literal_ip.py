"""A host written as numbers reads as the same IPv4 address the platform's inet_aton (what a
resolver uses) reads, although api/ parses it without the socket module."""

from __future__ import annotations

import ipaddress
import random
import socket

import pytest

from modelgate.api.addresses import literal_ip

# Each part's digits from one of these: decimal, octal, hex, or anything the host pattern lets by.
ALPHABETS = ("0123456789", "01234567", "0123456789abcdefABCDEF", "0123456789abcdefABCDEFxX")


def platform_reading(host: str) -> ipaddress.IPv4Address | None:
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def numeric_host(draw: random.Random) -> str:
    parts = []
    for _ in range(draw.randint(1, 5)):
        prefix = draw.choice(["", "0", "0x", "0X", "1", "2"])
        alphabet = draw.choice(ALPHABETS)
        body = "".join(draw.choice(alphabet) for _ in range(draw.randint(0, 11)))
        parts.append((prefix + body) or "0")
    return ".".join(parts)


@pytest.mark.parametrize(
    "host",
    [
        "127.1",
        "2852039166",
        "0xa9fea9fe",
        "0251.0376.0251.0376",
        "0xa9.0xfe.0xa9.0xfe",
        "169.16689662",
        "4294967295",
        "4294967296",
        "0x100000000",
        "1.2.3.256",
        "1.2.65535",
        "1.2.65536",
        "08",
        "0x",
        "0x.1",
        "00x1",
        "1.2.3.4.5",
        "09.1",
        "0",
    ],
)
def test_a_numeric_host_reads_as_inet_aton_reads_it(host: str) -> None:
    assert literal_ip(host) == platform_reading(host)


def test_random_numeric_hosts_read_as_inet_aton_reads_them() -> None:
    draw = random.Random(24)
    hosts = [numeric_host(draw) for _ in range(5000)]
    differing = [h for h in hosts if literal_ip(h) != platform_reading(h)]
    assert differing == []
    assert sum(literal_ip(h) is not None for h in hosts) > 500  # the draw reaches valid forms too
