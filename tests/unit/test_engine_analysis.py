"""Verdicts and breaches: missing data is Inconclusive and never advances; a Fail beyond a metric's
failureLimit rolls back in the same tick and says which metric, value, threshold and query."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from modelgate.api import BreachRule, MetricSpec, Phase, Verdict
from modelgate.core import AnalysisRun, MetricQuery, QueryResult
from modelgate.core.metric_verdicts import judge, judge_traffic
from tests.unit.engine_support import (
    ERROR_RATE,
    INTERVAL,
    P99_LATENCY,
    THROUGHPUT,
    Outcome,
    Simulator,
    analysis_spec,
    event_reasons,
    failing_value,
    make_spec,
    query_of,
    round_trip,
    weight,
    weights_set,
)


def progressing_at_20(*metrics: MetricSpec, min_requests: int = 50) -> Simulator:
    analysis = analysis_spec(metrics or (ERROR_RATE, P99_LATENCY), min_requests=min_requests)
    sim = Simulator(make_spec(weight(20), weight(100), analysis=analysis))
    sim.start()
    sim.advance(INTERVAL)
    return sim


def verdicts(sim: Simulator) -> dict[str, Verdict]:
    return {m.name: m.verdict for m in sim.status.analysis}


# -- single values ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (QueryResult(value=0.001, sample_count=1), Verdict.PASS),
        (QueryResult(value=0.01, sample_count=1), Verdict.PASS),  # the bound itself passes
        (QueryResult(value=0.02, sample_count=1), Verdict.FAIL),
        (QueryResult(), Verdict.INCONCLUSIVE),
        (QueryResult(value=math.nan, sample_count=1), Verdict.INCONCLUSIVE),
        (QueryResult(value=math.inf, sample_count=1), Verdict.FAIL),
        (QueryResult(error="timeout"), Verdict.ERROR),
    ],
    ids=["below", "at-max", "above", "empty", "nan", "inf", "error"],
)
def test_judge_against_a_maximum(result: QueryResult, expected: Verdict) -> None:
    assert judge(ERROR_RATE, result, None).verdict is expected


def test_judge_against_a_minimum() -> None:
    assert judge(THROUGHPUT, QueryResult(value=5.0), None).verdict is Verdict.PASS
    assert judge(THROUGHPUT, QueryResult(value=4.9), None).verdict is Verdict.FAIL
    assert judge(THROUGHPUT, QueryResult(value=-math.inf), None).verdict is Verdict.FAIL


@pytest.mark.parametrize(
    ("count", "min_requests", "expected"),
    [
        (QueryResult(value=50.0), 50, None),
        (QueryResult(value=49.0), 50, Verdict.INCONCLUSIVE),
        (QueryResult(), 50, Verdict.INCONCLUSIVE),
        (QueryResult(value=math.nan), 50, Verdict.INCONCLUSIVE),
        (QueryResult(), 0, None),
        (QueryResult(error="timeout"), 50, Verdict.ERROR),
    ],
    ids=["enough", "too-few", "empty", "nan", "empty-but-none-required", "error"],
)
def test_judge_traffic(count: QueryResult, min_requests: int, expected: Verdict | None) -> None:
    judgement = judge_traffic(count, min_requests)
    assert (judgement.verdict if judgement else None) is expected


# -- through the engine ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "outcome",
    [Outcome.EMPTY, Outcome.NAN, Outcome.FEW_REQUESTS, Outcome.NO_REQUEST_COUNT],
    ids=lambda o: o.value,
)
def test_missing_data_is_inconclusive_and_never_advances(outcome: Outcome) -> None:
    sim = progressing_at_20()
    for _ in range(5):
        decision = sim.tick(analysis=outcome, after=INTERVAL)
        assert (decision.status.phase, decision.status.current_step_index) == (Phase.PROGRESSING, 0)
        assert verdicts(sim)["error-rate"] is Verdict.INCONCLUSIVE
    assert sim.applied == [20]


def test_too_few_requests_hides_even_a_passing_value() -> None:
    sim = progressing_at_20()
    sim.tick(analysis=Outcome.FEW_REQUESTS)
    assert set(verdicts(sim).values()) == {Verdict.INCONCLUSIVE}
    assert "minRequests is 50" in (sim.status.analysis[0].message or "")


def test_infinite_latency_is_a_failure() -> None:
    sim = progressing_at_20()

    decision = sim.tick(
        analysis=sim.run(results={"p99-latency": QueryResult(value=math.inf, sample_count=1)})
    )

    assert decision.status.phase is Phase.ROLLED_BACK
    reason = decision.status.rollback_reason
    assert reason is not None
    assert (reason.metric, reason.value, reason.threshold) == ("p99-latency", None, 2.5)


def test_breach_rolls_back_in_the_same_tick() -> None:
    sim = progressing_at_20()

    decision = sim.tick(analysis=sim.run(Outcome.FAIL, metric="error-rate"))

    assert (decision.status.phase, decision.status.current_weight) == (Phase.ROLLED_BACK, 0)
    assert weights_set(decision) == [0]
    assert "RolledBack" in event_reasons(decision)
    reason = decision.status.rollback_reason
    assert reason is not None
    assert reason.metric == "error-rate"
    assert reason.value == failing_value(ERROR_RATE)
    assert (reason.threshold, reason.rule, reason.incumbent_value) == (0.01, BreachRule.MAX, None)
    assert reason.query == query_of(ERROR_RATE)
    assert reason.time == sim.now
    assert "error-rate" in (decision.status.message or "")


def test_breach_of_a_minimum_reports_the_minimum() -> None:
    sim = progressing_at_20(THROUGHPUT)

    decision = sim.tick(analysis=Outcome.FAIL)

    reason = decision.status.rollback_reason
    assert reason is not None
    assert (reason.metric, reason.value, reason.threshold, reason.rule) == (
        "throughput",
        4.0,
        5.0,
        BreachRule.MIN,
    )


def test_breach_of_a_minimum_by_minus_infinity_reports_the_minimum() -> None:
    bounded = MetricSpec(name="tokens-per-second", query="sum(rate(t[1m]))", min=5.0, max=500.0)
    sim = progressing_at_20(bounded)

    decision = sim.tick(
        analysis=sim.run(results={"tokens-per-second": QueryResult(value=-math.inf, sample_count=1)})
    )

    reason = decision.status.rollback_reason
    assert reason is not None
    assert (reason.metric, reason.value, reason.threshold) == ("tokens-per-second", None, 5.0)


def test_failure_limit_one_tolerates_one_fail_and_rolls_back_on_the_second() -> None:
    tolerant = ERROR_RATE.model_copy(update={"failure_limit": 1})
    sim = progressing_at_20(tolerant)

    first = sim.tick(analysis=Outcome.FAIL)
    assert first.status.phase is Phase.PROGRESSING
    assert first.status.analysis[0].failures == 1
    assert weights_set(first) == []

    # A Pass in between does not forgive the earlier failure (failureLimit counts all of them).
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert sim.status.current_step_index == 1

    second = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert (second.status.phase, weights_set(second)) == (Phase.ROLLED_BACK, [0])
    reason = second.status.rollback_reason
    assert reason is not None and "2 breaches, failureLimit 1" in reason.message


def test_a_fail_never_advances_a_step_even_when_tolerated() -> None:
    sim = progressing_at_20(ERROR_RATE.model_copy(update={"failure_limit": 3}))
    for _ in range(3):
        assert sim.tick(analysis=Outcome.FAIL, after=INTERVAL).status.current_step_index == 0


def test_history_is_bounded() -> None:
    sim = progressing_at_20()
    for _ in range(15):
        sim.tick(analysis=Outcome.FEW_REQUESTS, after=INTERVAL)
    assert all(len(m.history) == 10 for m in sim.status.analysis)
    assert sim.status.analysis[0].history[-1].time == sim.now


def test_long_error_texts_and_queries_still_make_a_valid_status() -> None:
    long_query = "sum(rate(" + "x" * 5000 + "[1m]))"
    sim = progressing_at_20()
    error = QueryResult(error="Prometheus at http://" + "p" * 3000 + ":9090 did not answer within 5s")

    decision = sim.tick(analysis=sim.run(results={"error-rate": error}))

    assert decision.status.analysis[0].verdict is Verdict.ERROR
    round_trip(decision.status)
    sim.advance(INTERVAL)
    run = sim.run(Outcome.FAIL)
    stretched = {name: MetricQuery(long_query, measured.result) for name, measured in run.metrics.items()}
    decision = sim.tick(analysis=AnalysisRun(run.at, run.request_count, stretched))
    assert decision.status.phase is Phase.ROLLED_BACK
    assert decision.status.rollback_reason is not None
    round_trip(decision.status)  # raises if any field is over its schema's limit


def test_each_step_needs_its_own_pass() -> None:
    # The Pass that completed step 0 was taken before step 1 started, so it cannot complete step 1.
    sim = Simulator(make_spec(weight(20), weight(40), weight(100)))
    sim.start()
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert sim.status.current_step_index == 1

    assert sim.tick(after=timedelta(minutes=10)).status.current_step_index == 1
