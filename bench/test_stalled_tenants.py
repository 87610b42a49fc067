"""64 hostile tenants against one ordinary rollback: the ordinary rollout's candidate starts failing,
and the time until the route shows it weight 0 is measured without them, then beside 64 rollouts,
each in a namespace of its own, whose Prometheus (a 127.0.0.1 listener of this test's, ended by its
pid) accepts and never answers, with the longest timeout and the shortest interval. The operator
runs with its default workers (64): before fair shares, these 64 held every one of them.
The hostile rollouts are started while the window of the last rollback alone passes, and no retry
follows the last rollback: the bench is mostly those waits (bench/REPORT.md)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kubernetes import client

from bench.report import record, summary
from modelgate.tick_threads import DEFAULT_WORKERS, SLOW_NAMESPACE_TICK
from testbed.localcluster import LocalCluster
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.operators import running
from tests.support.scenario import Scenario
from tests.support.stalling import breach_to_zero, ordinary_rollout, stalled_tenants, start_hostile

pytestmark = [pytest.mark.bench, pytest.mark.timeout(1800)]
HOSTILE = 64
ROUNDS = 3
# The failing requests leave the queries' window (1m) this long after the candidate answers well again.
WINDOW_WAIT = 70.0


def _healthy_again(scenario: Scenario) -> float:
    """The candidate answers well again; returns when its failing requests will have left the
    queries' window, so that a retry is not rolled back on them (time.monotonic())."""
    scenario.fleet.set_behaviour("chat-v2", Behaviour())
    return time.monotonic() + WINDOW_WAIT


def _retry(scenario: Scenario, retry: int, window_passed: float) -> None:
    """`modelgate retry` once `window_passed`, and the route back at weight 20."""
    time.sleep(max(window_passed - time.monotonic(), 0.0))
    retry_command = f'{{"action": "retry", "id": "r{retry}"}}'
    command = {"metadata": {"annotations": {"modelgate.io/command": retry_command}}}
    client.CustomObjectsApi(scenario.api_client).patch_namespaced_custom_object(
        "modelgate.io", "v1alpha1", scenario.namespace, "modelrollouts", "chat", command
    )
    scenario.wait_for_status("weight 20 again", lambda s: s.current_weight == 20, timeout=120)


def _rounds(scenario: Scenario, first: int) -> list[float]:
    """ROUNDS rollbacks, a retry (numbered from `first`) between each two."""
    latencies = [breach_to_zero(scenario)]
    for retry in range(first, first + ROUNDS - 1):
        _retry(scenario, retry, _healthy_again(scenario))
        latencies.append(breach_to_zero(scenario))
    return latencies


def _ticks_waiting_over_2s(operator: OperatorProcess) -> float:
    """Ticks of any namespace that waited longer than 2 s (a bucket bound) for a worker thread. Two
    reads, the bucket first: a tick in between counts as waiting, which overstates, never hides."""
    name = "modelgate_tick_wait_seconds"
    within = operator.counter(f"{name}_bucket", le="2.0")
    return operator.counter(f"{name}_count") - within


def test_hostile_tenants_do_not_delay_an_ordinary_rollback(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    operator: OperatorProcess,
    namespace: str,
    tmp_path: Path,
) -> None:
    began = time.monotonic()
    with stalled_tenants(
        local_bed, api_client, operator, namespace, tmp_path, hostile=HOSTILE, workers=DEFAULT_WORKERS
    ) as stalled:
        own, hostile, silent = stalled.operator, stalled.hostile, stalled.silent
        with running(own), ordinary_rollout(local_bed, api_client, namespace) as scenario:
            alone = _rounds(scenario, first=0)
            waiting_alone = _ticks_waiting_over_2s(own)
            window_passed = _healthy_again(scenario)
            hostile_from = time.monotonic()
            start_hostile(api_client, hostile, silent.address, local_bed.prometheus_url)
            hostile_start = time.monotonic() - hostile_from
            time.sleep(2 * SLOW_NAMESPACE_TICK.total_seconds())  # their ticks hang
            _retry(scenario, ROUNDS - 1, window_passed)
            beside = _rounds(scenario, first=ROUNDS)
            stuck = own.counter("modelgate_prometheus_query_errors_total")
            waiting_beside = _ticks_waiting_over_2s(own) - waiting_alone
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
            "ticks_waiting_over_2s_alone": waiting_alone,
            "ticks_waiting_over_2s_beside_hostile": waiting_beside,
            "seconds_to_start_the_hostile": hostile_start,
            "seconds_in_all": time.monotonic() - began,
        },
    )
    assert max(beside) < max(alone) + 2 * SLOW_NAMESPACE_TICK.total_seconds()
