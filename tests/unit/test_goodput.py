"""Goodput per accelerator and cost per million tokens: the arithmetic, evaluated by Prometheus's engine
over known series (and over a seeded simulation, to show the goodput is a lower bound of the requests
that met both targets); a side without accelerators is Inconclusive and its query is never sent; a
goodput below minRatio x the incumbent's fails."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from modelgate.api import AnalysisSpec, BreachRule, Verdict, parse_spec
from modelgate.api.errors import InvalidSpecError
from modelgate.api.goodput_targets import GoodputTargets
from modelgate.cli.render.analysis import threshold_text
from modelgate.cli.render.cost import cost_text
from modelgate.cli.render.rollout import render_status
from modelgate.core import Accelerators, AnalysisRun, MetricQuery, QueryResult
from modelgate.core.metric_verdicts import evaluate
from modelgate.core.results import cost_status
from modelgate.kube.pod_requests import requested
from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import preset_query
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.provider import run_plan
from modelgate.metrics.template import render_query
from tests.support.promql import NO_DATA, assert_evaluates, counter, one
from tests.unit.engine_support import Simulator, weight

POD = "chat-v2-5c4b3a2f1-xyz12"
INCUMBENT_POD = "chat-6d5c4b3a2-abc12"
CTX = replace(
    QueryContext.for_rollout("serving", "chat", "chat-v2", "30s"),  # the window: 1m
    candidate_accelerators=2,
    incumbent_accelerators=1,
    candidate_price=2.5,
    incumbent_price=3.0,
)
TTFT_BOUNDS = ("0.1", "0.25", "0.5", "1.0", "+Inf")  # a subset of vLLM's TTFT buckets
TPOT_BOUNDS = ("0.025", "0.05", "0.1", "+Inf")  # and of its inter-token latency's
NOW = datetime(2026, 12, 5, tzinfo=UTC)


def histogram(name: str, per_second: dict[str, float], pod: str = POD) -> dict[str, str]:
    """A classic histogram of one pod (the candidate's): cumulative bucket rates and the count."""
    labels = f'namespace="serving",pod="{pod}"'
    return {
        **{f'{name}_bucket{{{labels},le="{le}"}}': counter(rate) for le, rate in per_second.items()},
        f"{name}_count{{{labels}}}": counter(per_second["+Inf"]),
    }


def vllm_series(
    ttft: dict[str, float], tpot: dict[str, float], tokens: float, incumbent_requests: float = 300
) -> dict[str, str]:
    """The candidate's series, and the incumbent's requests (its TTFT observations)."""
    return {
        **histogram("vllm:time_to_first_token_seconds", {"+Inf": incumbent_requests}, INCUMBENT_POD),
        **histogram("vllm:time_to_first_token_seconds", ttft),
        **histogram("vllm:inter_token_latency_seconds", tpot),
        f'vllm:generation_tokens_total{{namespace="serving",pod="{POD}"}}': counter(tokens),
    }


def goodput(targets: GoodputTargets, ctx: QueryContext = CTX, name: str = "goodputPerAccelerator") -> str:
    return preset_query(name, "vllm", ctx, goodput=targets)


def test_goodput_is_the_share_on_time_at_both_sides_traffic_per_accelerator(tmp_path: Path) -> None:
    # 100 requests/s, 90 with a first token within 0.5 s; 1000 tokens/s, 30 of them later than 0.05 s;
    # the incumbent served 300 requests/s: at all 400/s, the candidate's share would meet 400 x 0.6.
    series = vllm_series(
        {"0.1": 50, "0.25": 80, "0.5": 90, "1.0": 98, "+Inf": 100},
        {"0.025": 900, "0.05": 970, "0.1": 990, "+Inf": 1000},
        tokens=1100,
    )
    on_bounds = GoodputTargets(ttft=0.5, tpot=0.05)
    assert_evaluates(
        tmp_path,
        series,
        {
            goodput(on_bounds): one(0.6 * 400 / 2),
            # Between bounds, each target rounds down: 0.3 reads le=0.25, 0.07 reads le=0.05.
            goodput(GoodputTargets(ttft=0.3, tpot=0.07)): one(0.5 * 400 / 2),
            # More late tokens than requests on time: none at least, never a negative goodput.
            goodput(GoodputTargets(ttft=0.1, tpot=0.025)): one(0),
            # Below every bound the server has: no data, never 0 passed off as a measurement.
            goodput(GoodputTargets(ttft=0.05, tpot=0.05)): NO_DATA,
            # Tokens: 11 per request of the candidate's.
            goodput(on_bounds, name="goodputTokensPerAccelerator"): one(0.6 * 11 * 400 / 2),
        },
    )


def cost_series(requests: float, tokens: float, incumbent_requests: float) -> dict[str, str]:
    """The candidate's requests and output tokens per second, and the incumbent's requests."""

    def series(name: str, pod: str) -> str:
        return f'{name}{{namespace="serving",pod="{pod}"}}'

    return {
        series("vllm:time_to_first_token_seconds_count", POD): counter(requests),
        series("vllm:generation_tokens_total", POD): counter(tokens),
        series("vllm:time_to_first_token_seconds_count", INCUMBENT_POD): counter(incumbent_requests),
    }


def test_the_cost_rule_compares_at_both_sides_traffic_whatever_the_split(tmp_path: Path) -> None:
    # 25 tokens a request, 80 requests a second in all: 2 accelerators at 2.5 an hour over
    # 2,000 tokens a second, whether the candidate serves a quarter of them or half.
    expected = 2 * 2.5 / 3600 / (25 * 80 / 1e6)
    cost = preset_query("costPerMillionTokens", "vllm", CTX)
    assert_evaluates(tmp_path, cost_series(20, 500, 60), {cost: one(expected)})
    assert_evaluates(tmp_path, cost_series(40, 1000, 40), {cost: one(expected)})
    # No tokens, or no requests, in the window: no data, not a division by zero.
    assert_evaluates(tmp_path, cost_series(20, 0, 60), {cost: NO_DATA})
    assert_evaluates(tmp_path, cost_series(0, 0, 80), {cost: NO_DATA})


def test_the_goodput_bound_never_exceeds_the_requests_that_met_both_targets(tmp_path: Path) -> None:
    """A seeded simulation of requests (TTFT and per-token latencies drawn around the targets): the
    query's value, over the histograms those requests fill, is at most the requests that met both."""
    rng = random.Random(26)
    ttft_target, tpot_target = 0.3, 0.07  # between bounds: each rounds down
    ttft_buckets = dict.fromkeys(TTFT_BOUNDS, 0)
    tpot_buckets = dict.fromkeys(TPOT_BOUNDS, 0)
    good = 0
    for _ in range(400):
        ttft = rng.lognormvariate(-1.5, 0.6)
        slow = 2.5 if rng.random() < 0.02 else 1.0  # a few requests decode slowly throughout
        gaps = [slow * rng.lognormvariate(-3.7, 0.3) for _ in range(rng.randint(2, 20))]
        good += ttft <= ttft_target and sum(gaps) / len(gaps) <= tpot_target
        _observe(ttft_buckets, ttft)
        for gap in gaps:
            _observe(tpot_buckets, gap)
    late = tpot_buckets["+Inf"] - tpot_buckets["0.05"]
    bound = max(0, ttft_buckets["0.25"] - late)
    assert 0 < bound <= good  # a bound that says something, and holds
    # No incumbent traffic: the value is the candidate's own good requests per second.
    series = vllm_series(ttft_buckets, tpot_buckets, tokens=1, incumbent_requests=0)
    ctx = replace(CTX, candidate_accelerators=1)
    targets = GoodputTargets(ttft=ttft_target, tpot=tpot_target)
    assert_evaluates(tmp_path, series, {goodput(targets, ctx): one(bound)})


def _observe(buckets: dict[str, int], value: float) -> None:
    for le in buckets:
        if le == "+Inf" or value <= float(le):
            buckets[le] += 1


# -- accelerators -----------------------------------------------------------------------------------
def pod(ready: bool = True, deleting: bool = False, **containers: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p"}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-05T00:00:00Z"
    return {
        "metadata": meta,
        "spec": {
            "initContainers": [{"name": "fetch", "resources": {"requests": {"nvidia.com/gpu": "4"}}}],
            "containers": [{"name": name, "resources": resources} for name, resources in containers.items()],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_accelerators_are_the_ready_pods_requests_of_the_resource() -> None:
    gpu = {"requests": {"nvidia.com/gpu": "2", "cpu": "500m"}}
    pods = [
        pod(server=gpu, sidecar={"requests": {"cpu": "100m"}}),
        pod(server={"limits": {"nvidia.com/gpu": "1"}}),  # a limit alone is the request
        pod(ready=False, server=gpu),  # not serving
        pod(deleting=True, server=gpu),  # leaving
    ]
    assert requested(pods, "nvidia.com/gpu") == 3  # init containers are done before the Pod is Ready
    assert requested(pods, "cpu") == pytest.approx(0.6)
    assert requested(pods, "amd.com/gpu") == 0


def analysis(*metrics: dict[str, Any], accelerators: dict[str, Any] | None = None) -> AnalysisSpec:
    spec = {
        "prometheus": {"address": "http://prometheus:9090"},
        "minRequests": 0,
        "metrics": list(metrics),
    }
    if accelerators is not None:
        spec["accelerators"] = accelerators
    return AnalysisSpec.model_validate(spec)


GOODPUT = {
    "name": "goodput",
    "preset": "goodputPerAccelerator",
    "goodput": {"ttft": 0.5, "tpot": 0.05},
    "compare": {"minRatio": 0.9},
}


def rollout(analysis_spec: dict[str, Any]) -> Any:
    return parse_spec(
        {
            "incumbent": {"deployment": "chat"},
            "candidate": {"deployment": "chat-v2"},
            "trafficRouting": {
                "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat", "candidateBackend": "chat-v2"}
            },
            "steps": [{"setWeight": 10}],
            "analysis": {"prometheus": {"address": "http://prometheus:9090"}, **analysis_spec},
        }
    )


@pytest.mark.parametrize(("candidate", "incumbent", "empty"), [(0, 1, "candidate"), (2, 0, "incumbent")])
def test_a_side_without_accelerators_is_inconclusive_and_its_query_is_not_sent(
    candidate: float, incumbent: float, empty: str
) -> None:
    spec = rollout({"metrics": [GOODPUT]})
    plan = analysis_plan(spec, "serving", requested={"candidate": candidate, "incumbent": incumbent})
    asked: list[str] = []

    def query(promql: str) -> QueryResult:
        asked.append(promql)
        return QueryResult(value=100.0, sample_count=1)

    run = run_plan(plan, NOW, query)
    assert plan.metrics["goodput"].candidate not in asked
    assert plan.metrics["goodput"].incumbent not in asked
    assert spec.analysis is not None
    [record] = evaluate(spec.analysis, run, ()).metrics
    assert record.verdict is Verdict.INCONCLUSIVE
    assert empty in (record.message or "") and "nvidia.com/gpu" in (record.message or "")


def test_the_spec_count_replaces_what_the_pods_request() -> None:
    spec = rollout({"accelerators": {"candidate": {"count": 4}}, "metrics": [GOODPUT]})
    plan = analysis_plan(spec, "serving", requested={"candidate": 0, "incumbent": 1})
    assert plan.accelerators == Accelerators("nvidia.com/gpu", candidate=4, incumbent=1)
    assert plan.metrics["goodput"].candidate.endswith("/ 4.0")
    assert plan.metrics["goodput"].incumbent is not None and plan.metrics["goodput"].incumbent.endswith(
        "/ 1.0"
    )


@pytest.mark.parametrize(
    ("candidate", "verdict"), [(44.0, Verdict.FAIL), (45.0, Verdict.PASS), (80.0, Verdict.PASS)]
)
def test_goodput_below_min_ratio_of_the_incumbents_fails(candidate: float, verdict: Verdict) -> None:
    spec = analysis(GOODPUT)
    measured = MetricQuery(
        "q", QueryResult(value=candidate, sample_count=1), incumbent=QueryResult(value=50.0, sample_count=1)
    )
    run = AnalysisRun(
        NOW,
        QueryResult(value=100.0, sample_count=1),
        {"goodput": measured},
        incumbent_request_count=QueryResult(value=100.0, sample_count=1),
        window=timedelta(minutes=1),
        accelerators=Accelerators("nvidia.com/gpu", candidate=2, incumbent=1),
    )
    result = evaluate(spec, run, ())
    assert result.metrics[0].verdict is verdict
    if verdict is Verdict.FAIL:
        assert result.breach is not None and result.breach.rule is BreachRule.MIN_RATIO
        assert result.breach.threshold == pytest.approx(45.0)


def test_the_accelerators_reach_custom_queries() -> None:
    rendered = render_query("sum(rate(x[{{ interval }}])) / {{ target.accelerators }}", CTX, "incumbent")
    assert rendered == "sum(rate(x[1m])) / 1.0"


@pytest.mark.parametrize(
    ("analysis_spec", "field"),
    [
        ({"metrics": [{**GOODPUT, "goodput": None}]}, "spec.analysis.metrics[0].goodput"),
        ({"metrics": [{**GOODPUT, "goodput": {"ttft": 0, "tpot": 0.05}}]}, "goodput.ttft"),
        (
            {
                "metrics": [
                    {"name": "e", "preset": "errorRate", "max": 0.1, "goodput": {"ttft": 1, "tpot": 1}}
                ]
            },
            "goodput",
        ),
        (
            {"metrics": [{"name": "c", "preset": "costPerMillionTokens", "compare": {"maxRatio": 1.2}}]},
            "accelerators",
        ),
        ({"accelerators": {"resourceName": "nvidia.com/gpu; rm"}, "metrics": [GOODPUT]}, "resourceName"),
        ({"accelerators": {"candidate": {"count": 0}}, "metrics": [GOODPUT]}, "candidate.count"),
        (
            {"metrics": [{**GOODPUT, "compare": {"minRatio": 0.9, "confidence": {"alpha": 0.05}}}]},
            "compare.minRatio",
        ),
    ],
    ids=[
        "no-targets",
        "zero-target",
        "targets-elsewhere",
        "cost-unpriced",
        "resource",
        "zero-count",
        "confidence",
    ],
)
def test_bad_goodput_and_cost_specs_are_refused_naming_the_field(
    analysis_spec: dict[str, Any], field: str
) -> None:
    metrics = [{k: v for k, v in m.items() if v is not None} for m in analysis_spec["metrics"]]
    with pytest.raises(InvalidSpecError, match=field.replace("[", r"\[").replace("]", r"\]")):
        rollout({**analysis_spec, "metrics": metrics})


# -- status.cost ------------------------------------------------------------------------------------
PRICED = {
    "accelerators": {"candidate": {"pricePerHour": 2.5}, "incumbent": {"pricePerHour": 3.0}},
    "metrics": [{"name": "ttft", "preset": "ttftP99", "max": 1.0}],
}


def test_status_cost_is_accelerator_hours_per_million_tokens_for_both_sides() -> None:
    spec = rollout(PRICED)
    plan = analysis_plan(spec, "serving", requested={"candidate": 2, "incumbent": 1})
    assert plan.output_tokens is not None
    tokens = {plan.output_tokens[0]: 30_000.0, plan.output_tokens[1]: 0.0}  # the incumbent made none
    run = run_plan(plan, NOW, lambda q: QueryResult(value=tokens.get(q, 100.0), sample_count=1))
    assert spec.analysis is not None
    cost = cost_status(spec.analysis, run)
    assert cost is not None and cost.time == NOW and cost.window_seconds == 60
    assert cost.candidate.cost_per_million_tokens == pytest.approx(2 * 2.5 * (60 / 3600) / 0.03)
    assert (cost.candidate.accelerators, cost.candidate.output_tokens) == (2, 30_000)
    assert cost.incumbent.cost_per_million_tokens is None and cost.incumbent.output_tokens is None
    shown = cost_text(cost)
    assert shown is not None and "2.778" in shown and "none" in shown


def test_without_prices_there_is_no_cost_and_nothing_is_read_for_it() -> None:
    spec = rollout({**PRICED, "accelerators": {"candidate": {"pricePerHour": 2.5}}})
    plan = analysis_plan(spec, "serving")
    assert plan.output_tokens is None and plan.accelerators is None
    assert spec.analysis is not None
    assert cost_status(spec.analysis, run_plan(plan, NOW, lambda q: QueryResult(value=1.0))) is None


def test_the_engine_records_the_cost_and_modelgate_status_shows_it() -> None:
    spec = rollout(PRICED)
    sim = Simulator(spec.model_copy(update={"steps": (weight(20), weight(100))}))
    sim.start()
    sim.advance(timedelta(seconds=30))
    run = replace(
        sim.run(),
        window=timedelta(minutes=1),
        accelerators=Accelerators("nvidia.com/gpu", candidate=2, incumbent=1),
        output_tokens=(
            QueryResult(value=30_000.0, sample_count=1),
            QueryResult(value=90_000.0, sample_count=1),
        ),
    )
    sim.tick(analysis=run)
    cost = sim.status.cost
    assert cost is not None and cost.time == sim.now
    assert cost.candidate.cost_per_million_tokens == pytest.approx(2 * 2.5 / 60 / 0.03)
    assert cost.incumbent.cost_per_million_tokens == pytest.approx(1 * 3.0 / 60 / 0.09)
    body = {
        "metadata": {"name": "chat", "namespace": "serving"},
        "spec": sim.spec.model_dump(by_alias=True, exclude_none=True),
        "status": sim.status.to_patch(),
    }
    shown = Console(record=True, width=200)
    shown.print(render_status(body))
    assert f"Cost per million output tokens: {cost_text(cost)}" in shown.export_text()


def test_the_analysis_table_says_the_min_ratio() -> None:
    assert threshold_text({"compare": {"minRatio": 0.9}}) == ">= 0.9 x incumbent"
