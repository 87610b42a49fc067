"""Pinned versions of the bed's parts, read from hack/versions.env (shared with hack/build-bins.sh)."""

from __future__ import annotations

import functools
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def pinned_versions() -> dict[str, str]:
    versions: dict[str, str] = {}
    for line in (REPO_ROOT / "hack" / "versions.env").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            versions[key.strip()] = value.strip()
    return versions
