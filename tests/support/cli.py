"""Running the `modelgate` command as a user would, in a process of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def modelgate(kubeconfig: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelgate", *args, f"--kubeconfig={kubeconfig}"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
