"""`modelgate status -w --timeout` in CI: it waits for the rollout's end and says how it ended in its
exit code (the one that succeeds is test_cli.py's walk), and into a file it tells each change as it
happens, not at the end."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client

from modelgate.api import Phase
from modelgate.cli.exit_codes import ExitCode
from modelgate.egress import ALLOW_LOOPBACK_ENV
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.processes import python_module_env
from tests.support.cli import modelgate
from tests.support.scenario import serving

WATCH_TIMEOUT = 300  # the 5m given to --timeout
INTERVAL_SECONDS = 10
# A change reaches the file within one interval, plus the watch's refresh (1 s), its reading and the
# operator's tick on a busy machine.
LATENESS_SECONDS = 5


def test_watching_a_rollout_that_rolls_back_exits_non_zero(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}, {"pause": {}}],  # only a breach ends it
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
    )
    with serving(local_bed, api_client, namespace, Behaviour(error_rate=0.08)) as scenario:
        scenario.apply(manifest)
        started = time.monotonic()
        watched = modelgate(
            operator.kubeconfig, "status", "chat", "-n", namespace, "-w", "--timeout", "5m", timeout=90
        )
        waited = time.monotonic() - started
        assert scenario.status().phase is Phase.ROLLED_BACK
    assert watched.returncode == ExitCode.ROLLED_BACK, watched.stdout + watched.stderr
    assert waited < WATCH_TIMEOUT  # it ended on the rollback, not on its timeout


def watching_into(path: Path, kubeconfig: Path, namespace: str) -> subprocess.Popen[bytes]:
    """`modelgate status chat -w > path`: a process of its own, standard output a file (block-buffered
    by Python unless the command flushes), as a CI job runs it."""
    with path.open("wb") as output:
        return subprocess.Popen(
            [sys.executable, "-m", "modelgate", "status", "chat", "-n", namespace, "-w", "--timeout", "5m"],
            stdout=output,
            stderr=subprocess.PIPE,
            env={
                "PATH": "/usr/bin:/bin",
                "KUBECONFIG": str(kubeconfig),
                ALLOW_LOOPBACK_ENV: "true",
                **python_module_env(),
            },
        )


@dataclass(frozen=True)
class Arrival:
    at: float  # time.monotonic() when the line was first seen in the file
    ended: bool  # whether the rollout had Succeeded by then, as the API server said
    line: str


def lines_as_they_arrive(
    path: Path, watch: subprocess.Popen[bytes], ended: Callable[[], bool]
) -> list[Arrival]:
    """Each whole line of the file, as it was first seen, until the watch exits."""
    seen: list[Arrival] = []
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        exited, rollout_ended = watch.poll() is not None, ended()
        lines = path.read_text().rpartition("\n")[0].splitlines()
        seen.extend(Arrival(time.monotonic(), rollout_ended, line) for line in lines[len(seen) :])
        if exited:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"the watch did not end in 180 s: {seen}")
