"""64 hostile tenants against one ordinary rollback: the ordinary rollout's candidate starts failing,
and the time until the route shows it weight 0 is measured without them, then beside 64 rollouts,
each in a namespace of its own, whose Prometheus (a 127.0.0.1 listener of this test's, ended by its
pid) accepts and never answers, with the longest timeout and the shortest interval. The operator
runs with its default workers (64): before fair shares, these 64 held every one of them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes import client

from bench.report import record, summary
from modelgate.loops import DEFAULT_WORKERS, SLOW_NAMESPACE_TICK
from testbed.localcluster import LocalCluster
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.operators import running
from tests.support.scenario import Scenario
from tests.support.stalling import breach_to_zero, ordinary_rollout, stalled_tenants, start_hostile

pytestmark = [pytest.mark.bench, pytest.mark.timeout(1800)]
HOSTILE = 64
ROUNDS = 3


def _rounds(scenario: Scenario, first: int) -> list[float]:
    """ROUNDS rollbacks, `modelgate retry` with a healthy candidate between them."""
    latencies = []
    for round_ in range(first, first + ROUNDS):
        latencies.append(breach_to_zero(scenario))
        scenario.fleet.set_behaviour("chat-v2", Behaviour())
        time.sleep(70)  # the failing requests leave the queries' window (1m) before the retry
        retry = {
            "metadata": {"annotations": {"modelgate.io/command": f'{{"action": "retry", "id": "r{round_}"}}'}}
        }
        client.CustomObjectsApi(scenario.api_client).patch_namespaced_custom_object(
            "modelgate.io", "v1alpha1", scenario.namespace, "modelrollouts", "chat", retry
        )
        scenario.wait_for_status("weight 20 again", lambda s: s.current_weight == 20, timeout=120)
    return latencies


def test_hostile_tenants_do_not_delay_an_ordinary_rollback(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    operator: OperatorProcess,
    namespace: str,
    tmp_path: Path,
) -> None:
    with stalled_tenants(
        local_bed, api_client, operator, namespace, tmp_path, hostile=HOSTILE, workers=DEFAULT_WORKERS
    ) as stalled:
        own, hostile, silent = stalled.operator, stalled.hostile, stalled.silent
        with running(own), ordinary_rollout(local_bed, api_client, namespace) as scenario:
            alone = _rounds(scenario, first=0)
            start_hostile(api_client, hostile, silent.address, local_bed.prometheus_url)
            time.sleep(2 * SLOW_NAMESPACE_TICK.total_seconds())  # their ticks hang
            beside = _rounds(scenario, first=ROUNDS)
            stuck = own.counter("modelgate_prometheus_query_errors_total")
    record(
        "stalled-tenants",
        {
            "hostile_rollouts": HOSTILE,
            "workers": DEFAULT_WORKERS,
            "breach_to_zero_alone_seconds": summary(alone),
            "breach_to_zero_beside_hostile_seconds": summary(beside),
            "samples_alone": alone,
            "samples_beside_hostile": beside,
            "failed_queries_of_the_hostile": stuck,
        },
    )
    assert max(beside) < max(alone) + 2 * SLOW_NAMESPACE_TICK.total_seconds()
