"""decide() is total (issue 34): over specs, statuses and observations the API admits, extreme numbers
included (the largest finite float, the smallest subnormal, 0, the schema's maxima and largest integer, and
what Prometheus may answer: NaN and infinities), every tick returns a Decision whose status the API
server would take. Before, a pricePerHour of 1e308 overflowed the cost to infinity, and the cost status
refused it inside decide(), before the breach's rollback: every tick failed while the candidate kept
its weight. The rollouts are the random ones of test_engine_properties.py, given extreme numbers."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from modelgate.api import MetricSpec, ModelRolloutSpec, ModelRolloutStatus
from modelgate.api.accelerators import MAX_ACCELERATORS, MAX_PRICE_PER_HOUR
from modelgate.api.analysis import MAX_MIN_REQUESTS
from modelgate.api.bounds import COUNT_MAX, EXACT_INT_MAX, METRIC_BOUND
from modelgate.core import Accelerators, AnalysisRun, Decision, MetricQuery, QueryResult
from tests.unit.engine_support import (
    ERROR_RATE,
    INTERVAL,
    Outcome,
    Simulator,
    analysis_spec,
    indefinite_pause,
    make_spec,
    round_trip,
    weight,
)
from tests.unit.test_engine_properties import PROPERTY_SETTINGS, TROUBLES, specs

FLOAT_MAX = sys.float_info.max
TINIEST = 5e-324
# What a query may answer: the extremes of a float, and Prometheus's NaN and infinities.
ANSWERS = [FLOAT_MAX, -FLOAT_MAX, TINIEST, -TINIEST, 0.0, 1.0, METRIC_BOUND, math.nan, math.inf, -math.inf]
AMOUNTS = [FLOAT_MAX, TINIEST, 0.0, 1.0, 1e9]  # counts and totals: never below 0
PRICES = [MAX_PRICE_PER_HOUR, TINIEST, 0.0, 2.5]
COUNTS = [MAX_ACCELERATORS, TINIEST, 1.0, None]
BOUNDS = [METRIC_BOUND, -METRIC_BOUND, TINIEST, 0.0]
HAND_WRITTEN_COUNTS = [None, None, None, None, COUNT_MAX, EXACT_INT_MAX]
COST = {"name": "cost", "preset": "costPerMillionTokens"}


def _side(draw: st.DrawFn) -> dict[str, Any]:
    side: dict[str, Any] = {"pricePerHour": draw(st.sampled_from(PRICES))}
    count = draw(st.sampled_from(COUNTS))
    return side if count is None else side | {"count": count}


def admitted(metric: dict[str, Any]) -> bool:
    try:
        MetricSpec.model_validate(metric)
    except ValueError:
        return False
    return True


@st.composite
def extreme_specs(draw: st.DrawFn) -> ModelRolloutSpec:
    """A random rollout with priced accelerators, a cost metric and bounds at the schema's extremes."""
    document = draw(specs()).model_dump(mode="json", by_alias=True, exclude_none=True)
    document["rollback"]["maxConsecutiveErrors"] = draw(st.sampled_from([1, 3, COUNT_MAX]))
    analysis = document.get("analysis")
    if analysis is None:
        return ModelRolloutSpec.model_validate(document)
    analysis["accelerators"] = {"candidate": _side(draw), "incumbent": _side(draw)}
    analysis["minRequests"] = draw(st.sampled_from([0, 50, MAX_MIN_REQUESTS]))
    for metric in analysis["metrics"]:
        metric["failureLimit"] = draw(st.sampled_from([0, 1, COUNT_MAX]))
        bound = "max" if "max" in metric else "min"
        extreme = metric | {bound: draw(st.sampled_from(BOUNDS))}
        if admitted(extreme):  # a share's bound stays in [0, 1]
            metric.update(extreme)
    cost_bound = draw(st.sampled_from([None, METRIC_BOUND, TINIEST]))
    if cost_bound is not None and len(analysis["metrics"]) < 20:
        analysis["metrics"].append(COST | {"max": cost_bound})
    return ModelRolloutSpec.model_validate(document)


@dataclass(frozen=True)
class Extremes:
    """What one tick's observations carry: a metric's answer, the request count, the accelerators and
    output tokens read, the window, and counts the status holds (written by hand): how many times the
    queries have failed in a row, and each metric's failures."""

    answer: float | None
    requests: float | None
    accelerators: tuple[float, float]
    tokens: tuple[float, float] | None
    window: timedelta | None
    errors_in_a_row: int | None
    failures: int | None


extremes = st.builds(
    Extremes,
    answer=st.sampled_from([None, *ANSWERS]),
    requests=st.sampled_from([None, *ANSWERS]),
    accelerators=st.tuples(st.sampled_from(AMOUNTS), st.sampled_from(AMOUNTS)),
    tokens=st.one_of(st.none(), st.tuples(st.sampled_from(ANSWERS), st.sampled_from(ANSWERS))),
    window=st.sampled_from([None, timedelta(seconds=30), timedelta(days=365 * 100)]),
    errors_in_a_row=st.sampled_from(HAND_WRITTEN_COUNTS),
    failures=st.sampled_from(HAND_WRITTEN_COUNTS),
)


def with_extremes(run: AnalysisRun, extreme: Extremes, target: int) -> AnalysisRun:
    metrics = dict(run.metrics)
    if extreme.answer is not None:
        name = list(metrics)[target % len(metrics)]
        metrics[name] = replace(metrics[name], result=QueryResult(value=extreme.answer, sample_count=1))
    if "cost" in metrics:  # the preset's own value, from the same tokens and prices
        metrics["cost"] = MetricQuery("preset:costPerMillionTokens", QueryResult(value=extreme.answer))
    requests = run.request_count
    if extreme.requests is not None:
        requests = QueryResult(value=extreme.requests, sample_count=1)
    tokens = None
    if extreme.tokens is not None:
        tokens = (QueryResult(value=extreme.tokens[0]), QueryResult(value=extreme.tokens[1]))
    candidate, incumbent = extreme.accelerators
    return replace(
        run,
        metrics=metrics,
        request_count=requests,
        window=extreme.window,
        accelerators=Accelerators("nvidia.com/gpu", candidate, incumbent),
        output_tokens=tokens,
    )


def with_counts(status: ModelRolloutStatus, extreme: Extremes) -> ModelRolloutStatus:
    """The status as written by hand, within the schema, with the tick's errors and failures."""
    if extreme.errors_in_a_row is not None:
        status = status.model_copy(update={"consecutive_prometheus_errors": extreme.errors_in_a_row})
    if extreme.failures is not None:
        failed = {"failures": extreme.failures}
        status = status.model_copy(
            update={"analysis": tuple(r.model_copy(update=failed) for r in status.analysis)}
        )
    return status


@PROPERTY_SETTINGS
@given(
    spec=extreme_specs(),
    generation=st.sampled_from([1, EXACT_INT_MAX]),
    ticks=st.lists(
        st.tuples(
            st.sampled_from([0, 30, 61, 3600]),
            st.sampled_from([Outcome.PASS, Outcome.PASS, *TROUBLES]),
            extremes,
            st.integers(min_value=0, max_value=3),
        ),
        min_size=5,
        max_size=40,
    ),
)
def test_every_tick_decides_and_its_status_is_one_the_api_server_takes(
    spec: ModelRolloutSpec, generation: int, ticks: list[tuple[int, Outcome, Extremes, int]]
) -> None:
    sim = Simulator(spec, generation=generation)
    for gap, outcome, extreme, target in ticks:
        sim.advance(timedelta(seconds=gap))
        sim.status = with_counts(sim.status, extreme)
        run = None
        if spec.analysis is not None and sim.analysis_due():
            run = with_extremes(sim.run(outcome), extreme, target)
        decision = sim.tick(analysis=run)
        assert isinstance(decision.decision, Decision)
        assert round_trip(decision.status) == decision.status  # within the schema: the API server takes it


def test_counts_at_the_schemas_maximum_stay_there() -> None:
    """A status written by hand may hold the schema's largest integer as its errors in a row or a
    metric's failures; one more error or Fail keeps it there rather than writing a status the API
    server refuses."""
    metric = ERROR_RATE.model_copy(update={"failure_limit": COUNT_MAX})
    spec = make_spec(
        weight(20), indefinite_pause(), analysis=analysis_spec([metric]), max_consecutive_errors=COUNT_MAX
    )
    for outcome in (Outcome.ERROR, Outcome.FAIL):
        sim = Simulator(spec)
        sim.start()
        sim.tick(analysis=Outcome.PASS, after=INTERVAL)
        hand_written = Extremes(None, None, (1.0, 1.0), None, None, EXACT_INT_MAX, EXACT_INT_MAX)
        sim.status = with_counts(sim.status, hand_written)
        after = sim.tick(analysis=outcome, after=INTERVAL).status
        assert round_trip(after) == after
        assert (after.consecutive_prometheus_errors, after.analysis[0].failures) == (
            EXACT_INT_MAX,
            EXACT_INT_MAX,
        )
