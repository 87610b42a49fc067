"""No tenant stalls another: with the operator's threads fewer than the hostile tenants (4 against
8 namespaces whose Prometheus accepts and never answers, each with the longest timeout and the
shortest interval), an ordinary rollout's candidate that starts failing is still rolled back in
seconds; and SIGTERM ends the operator in seconds although its threads are blocked in those reads."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from kubernetes import client

from modelgate.tick_threads import SLOW_NAMESPACE_TICK
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.processes import wait_exited
from tests.support.operators import running
from tests.support.stalling import breach_to_zero, ordinary_rollout, stalled_tenants, start_hostile

WORKERS = 4
HOSTILE = 8
# Without hostile tenants a few seconds (bench/REPORT.md); a thread held by one of them, 60 s.
ROLLBACK_WITHIN = 20.0
EXIT_WITHIN = 10.0


def test_hostile_tenants_delay_no_rollback_and_sigterm_still_ends_the_operator(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    operator: OperatorProcess,
    namespace: str,
    tmp_path: Path,
) -> None:
    with stalled_tenants(
        local_bed, api_client, operator, namespace, tmp_path, hostile=HOSTILE, workers=WORKERS
    ) as stalled:
        own, hostile, silent = stalled.operator, stalled.hostile, stalled.silent
        with running(own), ordinary_rollout(local_bed, api_client, namespace) as scenario:
            start_hostile(api_client, hostile, silent.address, local_bed.prometheus_url)
            # Their ticks begin to hang WORKERS at a time, each wave parked after SLOW_NAMESPACE_TICK.
            time.sleep((HOSTILE // WORKERS + 1) * SLOW_NAMESPACE_TICK.total_seconds())

            assert breach_to_zero(scenario, timeout=90) < ROLLBACK_WITHIN

            assert own.process is not None
            pid = own.process.pid
            os.kill(pid, signal.SIGTERM)
            stopping = time.monotonic()
            assert wait_exited(pid, timeout=30)
            assert time.monotonic() - stopping < EXIT_WITHIN
