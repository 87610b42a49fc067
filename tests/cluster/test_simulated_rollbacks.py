"""Rollbacks judged on parts no one here wrote: llm-d's vLLM simulator serves both models behind
Traefik, which splits real HTTP requests by the operator's weights. The simulator, not our double:
its failures, latencies and queue are its own, and the series are what it exports. Failures are
counted at the gateway (source traefik): the simulator, like vLLM without its HTTP instrumentator,
counts no failed request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase, Verdict
from testbed.inference_sim import SimulatorFlags
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.support.scenario import settled
from tests.support.simulated import simulated_serving

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
HEALTHY = SimulatorFlags(time_to_first_token=0.05, inter_token_latency=0.01)


def rolled_back(scenario: Any, manifest: dict[str, Any], timeout: float = 120) -> ModelRolloutStatus:
    scenario.apply(manifest)
    final: ModelRolloutStatus = scenario.wait_for_status(
        "the rollout to finish", lambda s: s.phase in FINISHED, timeout
    )
    assert final.phase is Phase.ROLLED_BACK, final.message
    scenario.wait_for_status("the rollback on the route", settled(Phase.ROLLED_BACK))
    return final


def test_ten_percent_server_errors_are_rolled_back_by_the_gateways_error_rate(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    failing = SimulatorFlags(failure_rate_percent=10, failure_types=("server_error",))
    metrics = [{"name": "errors", "preset": "errorRate", "source": "traefik", "max": 0.05}]
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 30}, {"pause": {"duration": "60s"}}, {"setWeight": 60}],
        prometheus=local_bed.prometheus_url,
        metrics=metrics,
        min_requests=50,
    )
    with simulated_serving(local_bed, api_client, namespace, traefik, failing, incumbent=HEALTHY) as scenario:
        final = rolled_back(scenario, manifest)
    reason = final.rollback_reason
    assert reason is not None and reason.metric == "errors", reason
    assert reason.query is not None and "traefik_service_requests_total" in reason.query, reason.query
    # 10% failing, judged on a window of at least 50 requests: the measured share's standard error
    # there is 4.2 points, so 20% (2.4 errors) came in about one run in a hundred (20.7% seen once);
    # 25% is 3.5 errors away.
    assert reason.value is not None and 0.05 < reason.value < 0.25, reason.value
    record_property("error rate at the gateway when rolled back", reason.value)


def test_three_times_the_time_to_first_token_is_rolled_back_by_comparison_not_by_the_absolute_bound(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    """The candidate's first token takes 3x the incumbent's, with the same inter-token latency: its
    end-to-end P99 stays within the absolute bound, which alone would have passed it."""
    slow_start = SimulatorFlags(time_to_first_token=0.15, time_to_first_token_std_dev=0.015)
    metrics = [
        {"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.5}},
        {"name": "latency", "preset": "latencyP99", "max": 1.0},
    ]
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 30}, {"pause": {"duration": "60s"}}, {"setWeight": 60}],
        prometheus=local_bed.prometheus_url,
        metrics=metrics,
    )
    with simulated_serving(
        local_bed, api_client, namespace, traefik, slow_start, incumbent=HEALTHY
    ) as scenario:
        final = rolled_back(scenario, manifest)
    reason = final.rollback_reason
    assert reason is not None and reason.metric == "ttft", reason
    latency = next(record for record in final.analysis if record.name == "latency")
    assert latency.verdict is Verdict.PASS, latency
    record_property("ttft P99 candidate at rollback (s)", reason.value)
    record_property("latency P99 candidate at rollback (s)", latency.value)
