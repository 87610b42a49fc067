"""Promotion judged on parts no one here wrote: llm-d's vLLM simulator serves both models, Traefik
splits real HTTP requests by the weights the operator writes, and the bed's Prometheus scrapes both.
The simulator, not our double, because the point is that modelgate reads what vLLM-compatible
servers and a real gateway export, not our picture of them."""

from __future__ import annotations

import json
import math
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.support.scenario import DEPLOYMENTS
from tests.support.simulated import HEALTHY, SimulatedScenario, promote, simulated_serving
from tests.support.traefik import assert_listening_on_loopback_only

SHARE_TOLERANCE = 0.05
Samples = list[tuple[float, float]]


def scraped_totals(scenario: SimulatedScenario, deployment: str, start: float, end: float) -> Samples:
    """The (scrape time, count) samples of one side's finished requests, by the simulator's own
    counter, raw: a range query's evaluated points would lag each change by up to a scrape interval."""
    selector = f'namespace="{scenario.namespace}",pod=~"{deployment}-.+"'
    query = f"vllm:e2e_request_latency_seconds_count{{{selector}}}[{math.ceil(end - start)}s]"
    url = f"{scenario.prometheus.address}/api/v1/query?" + urllib.parse.urlencode(
        {"query": query, "time": end}
    )
    with urllib.request.urlopen(url, timeout=5) as response:
        series = json.load(response)["data"]["result"]
    assert len(series) == 1, f"{deployment} has one Pod, so one series: {series}"
    return [(float(at), float(value)) for at, value in series[0]["values"]]


def answer_rates(scenario: SimulatedScenario, served_at: dict[int, float]) -> dict[int, dict[str, float]]:
    """The requests per second each side's simulators answered while Traefik served each weight: from
    the moment Traefik's API showed it until the route changed again (Traefik serves a change after
    the route shows it, never before). Per second, over each side's own scrapes in that time: the
    two simulators are scraped at different moments."""
    changes = scenario.recorder.weight_changes()
    held = {}
    for weight, start in served_at.items():
        end = next((at for at, seen in changes if at > start and seen != weight), None)
        assert end is not None, f"the route never left {weight} after traefik served it: {changes}"
        held[weight] = (start, end)
    first, last = min(start for start, _ in held.values()), max(end for _, end in held.values())
    totals = {side: scraped_totals(scenario, side, first, last) for side in DEPLOYMENTS}
    return {
        weight: {side: per_second(samples, start, end) for side, samples in totals.items()}
        for weight, (start, end) in held.items()
    }


def per_second(samples: Samples, start: float, end: float) -> float:
    inside = [(at, count) for at, count in samples if start <= at <= end]
    assert len(inside) >= 2, f"fewer than two scrapes between {start} and {end}: {samples}"
    (first_at, first), (last_at, last) = inside[0], inside[-1]
    return (last - first) / (last_at - first_at)


def test_a_good_candidate_is_promoted_and_traefik_splits_by_each_weight(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    """An A/A rollout: the same flags on both sides, each side with a seed of its own. Two weights,
    one each side of the middle: a split that ignored the weights shows at either."""
    weights = [20, 80]
    incumbent = replace(HEALTHY, seed=HEALTHY.seed + 1)
    with simulated_serving(
        local_bed, api_client, namespace, traefik, HEALTHY, incumbent=incumbent, rps=60
    ) as scenario:
        assert_listening_on_loopback_only(scenario.fleet, traefik, pods=len(DEPLOYMENTS))
        served_at = promote(scenario, local_bed.prometheus_url, weights, record_property)
        rates = answer_rates(scenario, served_at)
        lag = {w: at - (scenario.recorder.first_time_at(w, after=0) or at) for w, at in served_at.items()}
    record_property("seconds from the route's weight to traefik serving it", lag)
    shares = {weight: sides[DEPLOYMENTS[1]] / sum(sides.values()) for weight, sides in rates.items()}
    record_property("candidate share answered by the simulators, by weight", shares)
    for weight, share in shares.items():
        # Seen once, on a fresh clone's busy CI run: about 0.5 at every weight. Each side's rate tells
        # two simulators apart from one counted twice; Traefik's warnings tell whether it lost the
        # route's watch.
        assert abs(share - weight / 100) <= SHARE_TOLERANCE, (rates, traefik_complaints(traefik))


def traefik_complaints(traefik: TraefikGateway, most: int = 20) -> list[str]:
    """The last warnings and errors in Traefik's log."""
    lines = Path(traefik.process.log_file).read_text(errors="replace").splitlines()
    return [line for line in lines if " WRN " in line or " ERR " in line][-most:]
