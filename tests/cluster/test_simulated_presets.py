"""The presets of sources `traefik` and `vllm` measured on parts no one here wrote: Traefik splits
real HTTP requests 50/50 between two Services whose Pods llm-d's vLLM simulator serves, and the
bed's Prometheus scrapes both. The simulator, not our double: the series are what it exports, and
its injected failures are counted by no series of its own, only at the gateway."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kubernetes import client

from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import preset_query, request_count_query
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.inference_sim import SimulatorFlags
from testbed.localcluster import LocalCluster
from testbed.traefik_gateway import TraefikGateway
from testbed.waiting import WaitTimeout, wait_for
from tests.support.kube import scratch_namespace, set_route_weights
from tests.support.scenario import DEPLOYMENTS
from tests.support.simulated import ROUTE, simulated_serving

WINDOW = "10s"
FAILURE_PERCENT = 10
# Answers of the chat request in echo mode: 6 tokens, 0.1 s to the first, 0.02 s each after it.
TTFT, INTER_TOKEN = 0.1, 0.02
INCUMBENT = SimulatorFlags(time_to_first_token=TTFT, inter_token_latency=INTER_TOKEN)
CANDIDATE = SimulatorFlags(
    time_to_first_token=TTFT, inter_token_latency=INTER_TOKEN, failure_rate_percent=FAILURE_PERCENT
)


@pytest.fixture(scope="module")
def measured(
    local_bed: LocalCluster, api_client: client.ApiClient, traefik: TraefikGateway
) -> Iterator[tuple[QueryContext, PrometheusClient]]:
    with (
        scratch_namespace(api_client) as namespace,
        simulated_serving(local_bed, api_client, namespace, traefik, CANDIDATE, incumbent=INCUMBENT, rps=80),
    ):
        set_route_weights(api_client, namespace, ROUTE, {DEPLOYMENTS[0]: 50, DEPLOYMENTS[1]: 50})
        ctx = QueryContext.for_rollout(
            namespace,
            *DEPLOYMENTS,
            WINDOW,
            min_window=WINDOW,
            gateway_routes=(f"httproute/{ROUTE}",),
            backends=DEPLOYMENTS,
        )
        yield ctx, PrometheusClient(local_bed.prometheus_url, timeout=2)


def settles(prometheus: PrometheusClient, query: str, accept: Callable[[float | None], bool]) -> float | None:
    """The query's value once it is as expected (the window fills with the 50/50 split's traffic)."""
    seen: list[float | None] = []

    def probe() -> bool:
        seen.append(prometheus.query(query).value)
        return accept(seen[-1])

    try:
        wait_for(probe, timeout=60, interval=1, what=query)
    except WaitTimeout:
        pytest.fail(f"the last values {seen[-5:]} of {query}")
    return seen[-1]


def near(expected: float, tolerance: float) -> Callable[[float | None], bool]:
    return lambda value: value is not None and abs(value - expected) <= tolerance


def test_traefik_counts_each_sides_requests_and_the_candidates_failures(
    measured: tuple[QueryContext, PrometheusClient], record_property: Callable[[str, object], None]
) -> None:
    ctx, prometheus = measured
    # Each side's requests at the gateway: half of the 80/s each, over the 10 s window. Once the
    # window holds the split's traffic alone, the shares below are the steady ones.
    for side in ("candidate", "incumbent"):
        settles(prometheus, request_count_query("traefik", ctx, side), near(400, 100))
    # 10% of about 400 requests: 3 standard deviations are 4.5 points.
    errors = settles(
        prometheus, preset_query("errorRate", "traefik", ctx), near(FAILURE_PERCENT / 100, 0.045)
    )
    incumbent_errors = prometheus.query(preset_query("errorRate", "traefik", ctx, "incumbent")).value
    assert incumbent_errors == 0.0
    latency = settles(prometheus, preset_query("latencyP99", "traefik", ctx), lambda v: v is not None)
    # Traefik's buckets are 0.1, 0.3, 1.2 and 5 s: an answer of about 0.2 s lies in (0.1, 0.3].
    assert latency is not None and 0.1 < latency <= 0.3, latency
    record_property("candidate error rate at the gateway", errors)


def test_vllm_presets_on_the_simulator_judge_latency_and_leave_failures_unseen(
    measured: tuple[QueryContext, PrometheusClient],
) -> None:
    ctx, prometheus = measured
    # The requests it answered count against minRequests: 90% of the candidate's 400.
    settles(prometheus, request_count_query("vllm", ctx), near(360, 100))
    ttft = settles(prometheus, preset_query("ttftP99", "vllm", ctx), lambda v: v is not None)
    assert ttft is not None and 0.08 < ttft <= 0.25, ttft  # vLLM's bucket (0.08, 0.25] holds 0.1
    tpot = settles(prometheus, preset_query("tpotP99", "vllm", ctx), lambda v: v is not None)
    assert tpot is not None and 0.01 < tpot <= 0.025, tpot  # the bucket (0.01, 0.025] holds 0.02
    # Nothing in the simulator counts its 503s: no data, so Inconclusive, never a passing 0.
    assert prometheus.query(preset_query("errorRate", "vllm", ctx)).value is None
