"""Which TCP addresses a process and the processes it started listen on, read from /proc (Linux):
used to prove that every process of the bed binds to loopback only."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from testbed.processes import descendants

_LISTEN = "0A"


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = str(fd.readlink())
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    return inodes


def _decode(hex_address: str) -> str:
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    # /proc stores each 32-bit word in host (little-endian) order.
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(words)
    return f"{address}:{int(port, 16)}"


def listening_addresses(pid: int) -> list[str]:
    """What `pid` and its descendants listen on."""
    inodes = set().union(*(_socket_inodes(member) for member in [pid, *descendants(pid)]))
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == _LISTEN and fields[9] in inodes:
                found.append(_decode(fields[1]))
    return sorted(found)


def is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0]
    return ipaddress.ip_address(host).is_loopback
