"""Where the bed's executables are: the Go-built ones in the cache that hack/build-bins.sh fills
(its `bin/` folder links to the pinned versions), Prometheus from Debian's package."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

CACHE = Path(os.environ.get("MODELGATE_CACHE", Path.home() / ".cache" / "modelgate"))
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
)


class MissingBinary(FileNotFoundError):
    pass


def binary(name: str) -> Path:
    if name in GO_BUILT:
        path = CACHE / "bin" / name
        if not os.access(path, os.X_OK):
            raise MissingBinary(f"{path} is missing: run `make bins` (hack/build-bins.sh) to build {name}")
        return path
    found = shutil.which(name)
    if found is None:
        raise MissingBinary(f"{name} is not on PATH: run `make setup` to install it")
    return Path(found)
