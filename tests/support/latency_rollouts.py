"""Rollouts judged by a latency comparison with confidence (compare.confidence on ttftP99) on llm-d's
vLLM simulator behind Traefik: the flags of both sides, and an A/A rollout that must be promoted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase, Verdict
from testbed.inference_sim import SimulatorFlags
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.traefik_gateway import TraefikGateway
from tests.support.scenario import settled
from tests.support.simulated import simulated_serving

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
# The simulator draws whole milliseconds (the mean and deviation truncated to them too).
# 45 +- 4 ms: 84% of first tokens above 0.04 s, next to none above 0.06 s; a P99 in (0.04, 0.06].
QUICK = SimulatorFlags(time_to_first_token=0.045, time_to_first_token_std_dev=0.004)
# 48 +- 4 ms against 1.5x that, 72 +- 6 ms: 0.06% of the incumbent's first tokens above 0.06 s, 7% of
# the candidate's above 0.08 s: P99s in (0.04, 0.06] and (0.08, 0.1], and 0.08 >= 1.2 x 0.06.
STEADY = SimulatorFlags(time_to_first_token=0.048, time_to_first_token_std_dev=0.004)
SLOWER = SimulatorFlags(time_to_first_token=0.072, time_to_first_token_std_dev=0.006)
TTFT = {
    "name": "ttft",
    "preset": "ttftP99",
    "compare": {"maxRatio": 1.2, "confidence": {"alpha": 0.05, "margin": 1.5}},
}
STEPS = [{"setWeight": 50}, {"pause": {"duration": "4s"}}, {"setWeight": 100}]


def finished(scenario: Any, prometheus: str) -> ModelRolloutStatus:
    scenario.apply(
        model_rollout("chat", scenario.namespace, steps=STEPS, prometheus=prometheus, metrics=[TTFT])
    )
    final: ModelRolloutStatus = scenario.wait_for_status(
        "the rollout to finish", lambda s: s.phase in FINISHED, 90
    )
    scenario.wait_for_status("the route to settle", settled(final.phase))
    return final


def a_a_rollout_promoted(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    traefik: TraefikGateway,
    seed: int,
    record: Callable[[str, object], None],
) -> None:
    """The same flags on both sides, each with a seed of its own: each side's P99 is shown in
    (0.04, 0.06], within 1.5 x the incumbent's, and the rollout Succeeds."""
    candidate, incumbent = replace(QUICK, seed=seed), replace(QUICK, seed=seed + 1)
    with simulated_serving(bed, api_client, namespace, traefik, candidate, incumbent=incumbent) as scenario:
        final = finished(scenario, bed.prometheus_url)
    assert final.phase is Phase.SUCCEEDED, final.message
    [ttft] = final.analysis
    assert ttft.verdict is Verdict.PASS and ttft.quantiles is not None, ttft
    found = ttft.quantiles.bounds
    assert found is not None and found.candidate_upper == 0.06 and found.incumbent_lower == 0.04, found
    record(
        "requests counted (candidate, incumbent)",
        (ttft.quantiles.candidate_requests, ttft.quantiles.incumbent_requests),
    )
