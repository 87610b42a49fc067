"""From the evaluation that breached to the HTTPRoute showing weight 0, as a watcher of the route sees
it, on the local bed with the operator as a process. The acceptance test checks one rollback against
2 s; this measures several, with no notification receiver and again with one that accepts and never
answers (each rollback's notification to it waits and retries while the next rollbacks happen)."""

from __future__ import annotations

import contextlib
import time

import pytest
from kubernetes import client

from bench.report import record, summary
from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.silent_server import SilentServer
from testbed.waiting import wait_for
from tests.support.notifications import notifying
from tests.support.scenario import serving

pytestmark = pytest.mark.bench
ROUNDS = 5


@pytest.mark.parametrize("silent_receiver", [False, True], ids=["no receiver", "a silent receiver"])
def test_breach_to_route_at_zero(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    operator: OperatorProcess,
    namespace: str,
    silent_receiver: bool,
) -> None:
    latencies = []
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}, {"pause": {}}],
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
    )
    with contextlib.ExitStack() as stack:
        if silent_receiver:
            silent = stack.enter_context(SilentServer.in_thread())
            manifest = notifying(api_client, manifest, {"silent": ("webhook", f"{silent.address}/hook")})
        scenario = stack.enter_context(serving(local_bed, api_client, namespace, Behaviour(error_rate=0.08)))
        scenario.apply(manifest)
        previous = 0.0
        for round_ in range(ROUNDS):
            rolled_back = scenario.wait_for_status(
                "a rollback",
                lambda s, after=previous: (
                    s.phase is Phase.ROLLED_BACK
                    and s.rollback_reason is not None
                    and s.rollback_reason.time.timestamp() > after
                ),
            )
            assert rolled_back.rollback_reason is not None
            breached_at = previous = rolled_back.rollback_reason.time.timestamp()
            zero_at = wait_for(
                lambda at=breached_at: scenario.recorder.first_time_at(0, after=at - 0.001),
                timeout=10,
                what="the route at 0",
            )
            latencies.append(zero_at - breached_at)
            retry = {
                "metadata": {
                    "annotations": {"modelgate.io/command": f'{{"action": "retry", "id": "r{round_}"}}'}
                }
            }
            client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
                "modelgate.io", "v1alpha1", namespace, "modelrollouts", "chat", retry
            )
    name = "rollback-latency-silent-receiver" if silent_receiver else "rollback-latency"
    record(name, {"seconds": summary(latencies), "samples": latencies, "checked_at": time.time()})
