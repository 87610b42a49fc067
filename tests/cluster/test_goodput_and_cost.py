"""Goodput per accelerator and cost, on parts no one here wrote: llm-d's vLLM simulator serves both
sides with the same latency behind Traefik, and their Pods request nvidia.com/gpu from the bed's
kwok node. A candidate whose Pods need twice the accelerators for the same traffic is rolled back by
the goodput comparison; with equal requests it is promoted, and the cost in status is what the
simulators' own token counters, read from Prometheus here, make by hand."""

from __future__ import annotations

import json
import math
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import BreachRule, ModelRolloutStatus, Phase
from modelgate.api.cost_status import CostStatus
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.support.scenario import DEPLOYMENTS, settled
from tests.support.simulated import GPU, HEALTHY, SimulatedScenario, simulated_serving

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
PRICES = {"incumbent": 3.0, "candidate": 2.5}  # per accelerator-hour
GOODPUT = {
    "name": "goodput",
    "preset": "goodputPerAccelerator",
    "goodput": {"ttft": 0.5, "tpot": 0.05},  # far above the simulators' 50 ms and 10 ms
    "compare": {"minRatio": 0.9},
}


def goodput_rollout(namespace: str, prometheus: str, hold: str) -> dict[str, Any]:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 50}, {"pause": {"duration": hold}}, {"setWeight": 100}],
        prometheus=prometheus,
        metrics=[GOODPUT],
    )
    manifest["spec"]["analysis"]["accelerators"] = {
        side: {"pricePerHour": price} for side, price in PRICES.items()
    }
    return manifest


def finished(scenario: SimulatedScenario, timeout: float = 45) -> ModelRolloutStatus:
    final: ModelRolloutStatus = scenario.wait_for_status(
        "the rollout to finish", lambda s: s.phase in FINISHED, timeout
    )
    scenario.wait_for_status("the end on the route", settled(final.phase))
    return final


def test_twice_the_accelerators_for_the_same_latency_is_rolled_back_by_goodput(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    incumbent = replace(HEALTHY, seed=HEALTHY.seed + 1)
    with simulated_serving(
        local_bed, api_client, namespace, traefik, HEALTHY, incumbent=incumbent, gpus=(1, 2)
    ) as scenario:
        scenario.apply(goodput_rollout(namespace, local_bed.prometheus_url, hold="10s"))
        final = finished(scenario)
    assert final.phase is Phase.ROLLED_BACK, final.message
    reason = final.rollback_reason
    assert reason is not None and reason.metric == "goodput" and reason.rule is BreachRule.MIN_RATIO, reason
    assert reason.value is not None and reason.incumbent_value is not None
    # Every request met both targets on both sides: per accelerator, the candidate's is half.
    ratio = reason.value / reason.incumbent_value
    assert ratio == pytest.approx(0.5, rel=0.05), reason
    record_property("candidate / incumbent goodput per accelerator at rollback", ratio)


def cost_matching_the_counters(scenario: SimulatedScenario, deadline: float) -> CostStatus:
    """status.cost, once an evaluation's figures equal the hand arithmetic: each side's token counter
    read at the evaluation's time and one window before (Prometheus answers the operator a moment
    after that time, so a scrape may land in between; the next evaluation is then compared)."""
    mismatches = []
    while time.monotonic() < deadline:
        cost = scenario.status().cost
        if cost is not None and cost.candidate.output_tokens and cost.incumbent.output_tokens:
            by_hand = {side: side_by_hand(scenario, cost, side) for side in ("candidate", "incumbent")}
            figures = {
                side: (getattr(cost, side).output_tokens, getattr(cost, side).cost_per_million_tokens)
                for side in by_hand
            }
            if all(figures[side] == pytest.approx(by_hand[side], rel=1e-9) for side in by_hand):
                for side in by_hand:
                    accelerators = getattr(cost, side).accelerators
                    assert accelerators == 1, f"{side}'s Pod requests one {GPU}: {accelerators}"
                return cost
            mismatches.append((figures, by_hand))
        time.sleep(0.5)
    raise AssertionError(f"status.cost never matched the counters by hand: {mismatches[-3:]}")


def side_by_hand(scenario: SimulatedScenario, cost: CostStatus, side: str) -> tuple[float, float]:
    """(output tokens, cost per million): 1 accelerator x the price x the window in hours / (tokens / 1e6)."""
    deployment = DEPLOYMENTS[0] if side == "incumbent" else DEPLOYMENTS[1]
    at = cost.time.timestamp()
    tokens = counter_total(scenario, deployment, at) - counter_total(
        scenario, deployment, at - cost.window_seconds
    )
    hours = cost.window_seconds / 3600
    # No tokens by hand: Prometheus had not scraped them yet at that time; a mismatch, looked at again.
    return tokens, 1 * PRICES[side] * hours / (tokens / 1e6) if tokens else math.inf


def counter_total(scenario: SimulatedScenario, deployment: str, at: float) -> float:
    """The side's vllm:generation_tokens_total at `at`; 0 before its Pod's first scrape."""
    query = f'sum(vllm:generation_tokens_total{{namespace="{scenario.namespace}",pod=~"{deployment}-.+"}})'
    url = f"{scenario.prometheus.address}/api/v1/query?" + urllib.parse.urlencode(
        {"query": query, "time": at}
    )
    with urllib.request.urlopen(url, timeout=5) as response:
        result = json.load(response)["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0
