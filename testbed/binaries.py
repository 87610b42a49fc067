"""Where the bed's executables are: the Go-built ones in the cache that hack/build-bins.sh fills
(its `bin/` folder links to the pinned versions), Prometheus from Debian's package.

A Go-built binary is used only if its sha256 matches the one hack/build-bins.sh recorded beside it
(SHA256SUMS in its folder): a binary replaced or damaged in the cache since it was built is refused."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

CACHE = Path(os.environ.get("MODELGATE_CACHE", Path.home() / ".cache" / "modelgate"))
CHECKSUMS = "SHA256SUMS"
GO_BUILT = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "helm",
    "actionlint",
    "traefik",
    "inference-sim",
    "lws-controller",
)
# Files verified in this process, with what their stat said then: hashing 100 MB per call is slow.
_verified: dict[Path, tuple[int, int, int]] = {}


class MissingBinary(FileNotFoundError):
    pass


class UnverifiedBinary(RuntimeError):
    """A cached binary not shown to be the one built: no checksum recorded, or other bytes."""


def binary(name: str) -> Path:
    if name in GO_BUILT:
        path = CACHE / "bin" / name
        if not os.access(path, os.X_OK):
            raise MissingBinary(f"{path} is missing: run `make bins` (hack/build-bins.sh) to build {name}")
        verify(path.resolve())
        return path
    found = shutil.which(name)
    if found is None:
        raise MissingBinary(f"{name} is not on PATH: run `make setup` to install it")
    return Path(found)


def recorded_sha256(built: Path) -> str | None:
    """The sha256 SHA256SUMS (sha256sum's format) beside `built` records for it, if any."""
    checksums = built.parent / CHECKSUMS
    if not checksums.is_file():
        return None
    for line in checksums.read_text().splitlines():
        digest, _, file_name = line.partition("  ")
        if file_name == built.name:
            return digest
    return None


def verify(built: Path) -> None:
    """Raises unless `built` is what hack/build-bins.sh recorded, naming the file and both hashes."""
    stat = built.stat()
    seen = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
    if _verified.get(built) == seen:
        return
    recorded = recorded_sha256(built)
    if recorded is None:
        raise UnverifiedBinary(
            f"{built} has no checksum in {built.parent / CHECKSUMS}: run `make bins` (hack/build-bins.sh), "
            "which records one for each binary it builds or finds"
        )
    with built.open("rb") as file:
        found = hashlib.file_digest(file, "sha256").hexdigest()
    if found != recorded:
        raise UnverifiedBinary(
            f"{built} does not match its record in {built.parent / CHECKSUMS}: recorded sha256 {recorded}, "
            f"found {found}; run `make bins` to rebuild it"
        )
    _verified[built] = seen
