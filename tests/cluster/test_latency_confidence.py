"""Latency judged with confidence on parts no one here wrote: llm-d's vLLM simulator serves both
models behind Traefik, and the operator bounds each side's TTFT P99 from the simulator's own histogram
buckets (compare.confidence on ttftP99, docs/statistics.md). The simulator draws each first token
from a normal distribution (mean, standard deviation); 1.5x both is a TTFT 1.5x the incumbent's at
every quantile. Its TTFT buckets around them: 0.04, 0.06, 0.08, 0.1 s. An A/A rollout on the same
buckets is promoted in `make bench` (bench/test_latency_a_a.py, three runs); the false-rollback share
of A/A comparisons is bounded by alpha in tests/unit/test_quantile_bounds.py."""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client

from modelgate.api import BreachRule, Phase
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.support.latency_rollouts import SLOWER, STEADY, finished
from tests.support.simulated import simulated_serving


def test_a_candidate_with_one_and_a_half_times_the_ttft_is_rolled_back_on_its_buckets(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    with simulated_serving(local_bed, api_client, namespace, traefik, SLOWER, incumbent=STEADY) as scenario:
        final = finished(scenario, local_bed.prometheus_url)
    assert final.phase is Phase.ROLLED_BACK, final.message
    reason = final.rollback_reason
    assert reason is not None and reason.metric == "ttft" and reason.rule is BreachRule.MAX_RATIO, reason
    found = reason.quantile_bounds
    # Above 0.08 against at most 0.06: 0.08 >= 1.2 x 0.06, each bound at alpha / 2.
    assert found is not None and found.candidate_lower == 0.08 and found.incumbent_upper == 0.06, found
    record_property("rollback", reason.message)
