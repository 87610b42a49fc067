"""Running the `modelgate` command as a user would, in a process of its own."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

from modelgate.egress import ALLOW_LOOPBACK_ENV
from testbed.processes import MODELGATE_ENTRY, fork_server, python_module_env


def modelgate(
    kubeconfig: Path | None, *args: str, timeout: float = 60, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """None: a command that asks no cluster (replay). The process is forked from one that imported
    the command already (testbed.forkserver): a `python -m modelgate` spent over a second of CPU on
    its imports, at every run. `env`: more variables for the command."""
    cluster = [] if kubeconfig is None else [f"--kubeconfig={kubeconfig}"]
    return fork_server(MODELGATE_ENTRY.partition(":")[0]).run(
        MODELGATE_ENTRY,
        [*args, *cluster],
        # This checkout's modelgate (with $PYTHONPATH), not whichever the venv has installed. The
        # bed's Prometheus is on 127.0.0.1, which only a local bed's settings allow.
        {
            "COLUMNS": "200",
            "PATH": "/usr/bin:/bin",
            ALLOW_LOOPBACK_ENV: "true",
            **python_module_env(),
            **(env or {}),
        },
        timeout,
    )
