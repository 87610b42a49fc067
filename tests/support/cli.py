"""Running the `modelgate` command as a user would, in a process of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def modelgate(kubeconfig: Path | None, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """None: a command that asks no cluster (replay)."""
    cluster = [] if kubeconfig is None else [f"--kubeconfig={kubeconfig}"]
    return subprocess.run(
        [sys.executable, "-m", "modelgate", *args, *cluster],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
