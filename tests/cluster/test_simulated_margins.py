"""Passing on evidence where nothing fails, on llm-d's vLLM simulator behind Traefik (no injected
failures on either side): a margin in rate points (sequential.marginIncrease) passes after the
documented number of candidate requests and the rollout Succeeds; a ratio margin never can, and
pauses at its inconclusive deadline naming the metric without events. And a breach the counts
already show rolls back at the evaluation that shows it, however high minRequests is. Failures are
counted at the gateway (source traefik), as in test_simulated_rollbacks.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from modelgate.api import BreachRule, Phase, SequentialTest
from modelgate.core.counted import zero_event_pass
from testbed.inference_sim import SimulatorFlags
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.support.simulated import HEALTHY, candidate_at, simulated_serving
from tests.support.traefik import wait_until_traefik_serves

INTERVAL = 2.0  # seconds, the bed's analysis interval
RPS = 60
FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)


def errors_judged_by(sequential: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"name": "errors", "preset": "errorRate", "source": "traefik", "sequential": sequential}]


def test_a_margin_in_points_passes_a_service_without_errors_after_the_documented_requests(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    test = {"alpha": 0.05, "marginIncrease": 0.02}
    needed = zero_event_pass(SequentialTest.model_validate(test), 1)  # about log(4/alpha)/0.02
    assert needed is not None
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}, {"setWeight": 50}],
        prometheus=local_bed.prometheus_url,
        metrics=errors_judged_by(test),
    )
    with simulated_serving(
        local_bed, api_client, namespace, traefik, HEALTHY, incumbent=HEALTHY, rps=RPS
    ) as scenario:
        scenario.apply(manifest)
        live = wait_until_traefik_serves(traefik, api_client, namespace, "chat", candidate_at(20))
        advanced = scenario.wait_for_status("step 0 to pass", lambda s: s.current_step_index >= 1, 60)
        took = time.time() - live
        final = scenario.wait_for_status("the rollout to finish", lambda s: s.phase in FINISHED, 60)
    assert final.phase is Phase.SUCCEEDED, final.message
    evidence = advanced.analysis[0].sequential
    assert evidence is not None and evidence.candidate_events == evidence.incumbent_events == 0, evidence
    # It cannot pass before the documented count; at 12 candidate requests a second it passes
    # within a few intervals of reaching it (the status read may be an evaluation late).
    per_second = RPS * 0.20
    assert needed <= evidence.candidate_requests <= needed + 4 * INTERVAL * per_second, evidence
    assert took <= needed / per_second + 5 * INTERVAL, took
    record_property("candidate requests counted at step 0's pass", evidence.candidate_requests)
    record_property("documented requests (counted.zero_event_pass)", needed)
    record_property("seconds from weight 20 live to step 1", round(took, 1))


def test_a_breach_the_counts_show_rolls_back_at_that_evaluation_whatever_min_requests_says(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    """A candidate failing half its requests: no window reaches minRequests (100,000), and the
    counts show the breach within hundreds of requests: it is rolled back on them."""
    failing = SimulatorFlags(failure_rate_percent=50, failure_types=("server_error",))
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 30}, {"pause": {"duration": "60s"}}],
        prometheus=local_bed.prometheus_url,
        metrics=errors_judged_by({"alpha": 0.05}),
        min_requests=100_000,
    )
    with simulated_serving(
        local_bed, api_client, namespace, traefik, failing, incumbent=HEALTHY, rps=RPS
    ) as scenario:
        scenario.apply(manifest)
        live = wait_until_traefik_serves(traefik, api_client, namespace, "chat", candidate_at(30))
        final = scenario.wait_for_status("the rollback", lambda s: s.phase in FINISHED, 60)
    assert final.phase is Phase.ROLLED_BACK, final.message
    reason = final.rollback_reason
    assert reason is not None and reason.rule is BreachRule.SEQUENTIAL, reason
    # Judged on the counts, far below minRequests: a window's rule would still be waiting for
    # 100,000 requests. How soon the counts suffice is the engine's, proven by seeded simulation
    # (tests/unit/test_engine_margin_increase.py, the breach below minRequests); here a busy
    # machine's slower traffic only delays it.
    (judged,) = [metric for metric in final.analysis if metric.name == reason.metric]
    evidence = judged.sequential
    assert evidence is not None and 0 < evidence.candidate_requests < 1_000, evidence
    assert evidence.candidate_events > 0, evidence
    record_property("evaluations to the rollback", len(judged.history))
    record_property("seconds from weight 30 live to the rollback", round(reason.time.timestamp() - live, 1))
