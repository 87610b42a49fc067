"""The pins of a lock that `make lock` (pip-compile --generate-hashes) writes: name, version and the
sha256 of every file pip may install for it. `make venv` and the Dockerfile install with
--require-hashes, so a pin without a hash would stop them; the audit refuses such a lock first."""

from __future__ import annotations

import re
from dataclasses import dataclass

_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)")
_HASH = re.compile(r"--hash=sha256:(?P<digest>[0-9a-f]{64})\b")


@dataclass(frozen=True)
class Pin:
    version: str
    hashes: frozenset[str]


def normalized(name: str) -> str:
    """The PEP 503 form: `boolean.py` and `Boolean_Py` both read `boolean-py`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_lines(text: str) -> list[str]:
    """One line per requirement: continuations joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", text)
    lines = (line.split(" #", 1)[0].strip() for line in joined.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def read_pins(text: str) -> dict[str, Pin]:
    """The lock's pins by normalized name; a requirement that is not `name==version` is an error."""
    pins = {}
    for line in requirement_lines(text):
        match = _PIN.match(line)
        if match is None:
            raise ValueError(f"not a pinned requirement (name==version): {line}")
        hashes = frozenset(found["digest"] for found in _HASH.finditer(line))
        pins[normalized(match["name"])] = Pin(match["version"], hashes)
    return pins


def unhashed(pins: dict[str, Pin]) -> list[str]:
    return sorted(f"{name}=={pin.version}" for name, pin in pins.items() if not pin.hashes)
