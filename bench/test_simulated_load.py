"""The load acceptance of issue 20 on the bed (moved out of `make test` for its 37 s): a candidate
with a lower --max-num-seqs than the incumbent holds 10% of the traffic and is rolled back by the
time-to-first-token comparison once its weight passes what it can run. llm-d's simulator, not our
double: its queue and slow-down under load are what is judged."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from testbed.inference_sim import SimulatorFlags
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.cluster.test_simulated_rollbacks import rolled_back
from tests.support.simulated import simulated_serving

pytestmark = pytest.mark.bench


def test_a_candidate_loaded_past_its_max_num_seqs_is_rolled_back_as_its_first_token_slows(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    """The candidate runs 2 requests at once where the incumbent runs 64, both 3x slower when full: at
    10% of 60 requests/s it keeps up; at 60% requests queue, and those it runs answer their first
    token 3x later. (The simulator times the first token from when a request starts running, not from
    its arrival as vLLM does, so its queue shows in the queue gauge, not in the first token's time.)"""
    small = SimulatorFlags(max_num_seqs=2, time_factor_under_load=3.0, inter_token_latency=0.02)
    roomy = SimulatorFlags(max_num_seqs=64, time_factor_under_load=3.0, inter_token_latency=0.02)
    metrics = [{"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.5}}]
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[
            {"setWeight": 10},
            {"pause": {"duration": "6s"}},
            {"setWeight": 60},
            {"pause": {"duration": "60s"}},
        ],
        prometheus=local_bed.prometheus_url,
        metrics=metrics,
    )
    with simulated_serving(
        local_bed, api_client, namespace, traefik, small, incumbent=roomy, rps=60
    ) as scenario:
        final = rolled_back(scenario, manifest)
        weights = scenario.recorder.weights_until(0)
        waiting = f'vllm:num_requests_waiting{{namespace="{namespace}",pod=~"chat-v2-.+"}}'
        peak_queue = scenario.prometheus.query(f"max(max_over_time({waiting}[5m]))").value
    reason = final.rollback_reason
    assert reason is not None and reason.metric == "ttft", reason
    assert weights == [0, 10, 60, 0], weights  # held at 10%, rolled back only past what it holds
    assert peak_queue is not None and peak_queue > 2, peak_queue
    record_property("ttft P99 of the candidate at rollback (s)", reason.value)
    record_property("the candidate's longest queue", peak_queue)
