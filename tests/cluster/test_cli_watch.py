"""`modelgate status -w --timeout` in CI: it waits for the rollout's end and says how it ended in its
exit code (the one that succeeds is test_cli.py's walk)."""

from __future__ import annotations

import time

from kubernetes import client

from modelgate.api import Phase
from modelgate.cli.exit_codes import ExitCode
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.scenario import serving

WATCH_TIMEOUT = 300  # the 5m given to --timeout


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
