"""Files that ship inside Go modules (CRDs, kwok's stage files), fetched through the Go module proxy
into the module cache, so the bed uses exactly the released manifests of a pinned version."""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path


@functools.cache
def module_dir(module: str, version: str) -> Path:
    result = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=False,
    )
    info = json.loads(result.stdout or "{}")
    directory = info.get("Dir")
    if info.get("Error") or not directory:
        raise RuntimeError(
            f"cannot fetch Go module {module}@{version}: {info.get('Error') or result.stderr.strip()}"
        )
    return Path(directory)
