"""Running the `modelgate` command as a user would, in a process of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from modelgate.egress import ALLOW_LOOPBACK_ENV
from testbed.processes import python_module_env


def modelgate(kubeconfig: Path | None, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """None: a command that asks no cluster (replay)."""
    cluster = [] if kubeconfig is None else [f"--kubeconfig={kubeconfig}"]
    return subprocess.run(
        [sys.executable, "-m", "modelgate", *args, *cluster],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        # This checkout's modelgate (with $PYTHONPATH), not whichever the venv has installed. The
        # bed's Prometheus is on 127.0.0.1, which only a local bed's settings allow.
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", ALLOW_LOOPBACK_ENV: "true", **python_module_env()},
    )
