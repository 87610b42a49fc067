"""Judging a candidate as ML teams do: against the incumbent in the same window, by a sequential test
on counts, with dry-run metrics, per-step failure limits and progress deadlines."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from modelgate.api import BreachRule, MetricSpec, Phase, ProgressDeadlines, SequentialEvidence, Verdict
from modelgate.core import CommandAction, ConditionType, QueryResult, Reason, SideTotals
from modelgate.core.reasons import condition
from tests.unit.engine_support import (
    ERROR_RATE,
    INTERVAL,
    Outcome,
    Simulator,
    Ticked,
    analysis_spec,
    command,
    event_reasons,
    make_spec,
    timed_pause,
    weight,
)

TTFT = MetricSpec.model_validate({"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.2}})
ERRORS = MetricSpec.model_validate(
    {"name": "errors", "preset": "errorRate", "compare": {"maxIncrease": 0.005}}
)
TESTED = MetricSpec.model_validate({"name": "errors", "preset": "errorRate", "sequential": {"alpha": 0.05}})


def value(v: float | None) -> QueryResult:
    return QueryResult(value=v, sample_count=1)


def evaluated(sim: Simulator, outcome: Outcome = Outcome.PASS, **overrides: object) -> Ticked:
    """One interval later, a tick with an analysis run taken then."""
    sim.advance(INTERVAL)
    return sim.tick(analysis=sim.run(outcome, **overrides))


def started(*metrics: MetricSpec, steps: tuple = (weight(10), weight(100))) -> Simulator:
    sim = Simulator(make_spec(*steps, analysis=analysis_spec(metrics)))
    sim.start()
    return sim


def test_twice_the_incumbents_ttft_rolls_back_by_the_ratio_rule() -> None:
    sim = started(TTFT)
    decision = evaluated(sim, results={"ttft": value(2.0)}, incumbent={"ttft": value(1.0)})
    assert decision.status.phase is Phase.ROLLED_BACK
    (record,) = decision.status.analysis
    assert (record.verdict, record.value, record.incumbent_value) == (Verdict.FAIL, 2.0, 1.0)
    reason = decision.status.rollback_reason
    assert reason is not None  # the breach as data: the effective bound, not only a message
    assert (reason.rule, reason.value, reason.incumbent_value) == (BreachRule.MAX_RATIO, 2.0, 1.0)
    assert reason.threshold == pytest.approx(1.2)


def test_an_increase_past_the_incumbents_is_rolled_back_with_its_effective_bound() -> None:
    sim = started(ERRORS)
    decision = evaluated(sim, results={"errors": value(0.03)}, incumbent={"errors": value(0.01)})
    reason = decision.status.rollback_reason
    assert reason is not None
    assert (reason.rule, reason.incumbent_value) == (BreachRule.MAX_INCREASE, 0.01)
    assert reason.threshold == pytest.approx(0.015)


def test_within_the_ratio_passes_and_shows_both_values() -> None:
    sim = started(TTFT)
    decision = evaluated(sim, results={"ttft": value(1.1)}, incumbent={"ttft": value(1.0)})
    (record,) = decision.status.analysis
    assert (record.verdict, record.value, record.incumbent_value) == (Verdict.PASS, 1.1, 1.0)


def test_an_incumbent_error_spike_does_not_roll_back_a_healthy_candidate() -> None:
    sim = started(ERRORS)
    decision = evaluated(sim, results={"errors": value(0.01)}, incumbent={"errors": value(0.30)})
    assert decision.status.phase is not Phase.ROLLED_BACK
    assert decision.status.analysis[0].verdict is Verdict.PASS


def test_too_little_data_on_the_incumbent_side_is_inconclusive() -> None:
    sim = started(TTFT)
    few = evaluated(sim, incumbent_requests=value(3))
    assert few.status.analysis[0].verdict is Verdict.INCONCLUSIVE
    assert "incumbent requests" in (few.status.analysis[0].message or "")
    none = evaluated(sim, incumbent={"ttft": value(None)})
    assert none.status.analysis[0].verdict is Verdict.INCONCLUSIVE


def totals(c_events: float, i_events: float, c_requests: float, i_requests: float) -> tuple:
    """Both sides' cumulative counters as read at one evaluation."""
    return (
        SideTotals(value(c_requests), value(c_events)),
        SideTotals(value(i_requests), value(i_events)),
    )


def held_at_10() -> Simulator:
    """A rollout held at 10% for an hour, judged by the sequential test alone."""
    return started(TESTED, steps=(weight(10), timed_pause("1h"), weight(100)))


def test_the_sequential_test_rolls_back_on_evidence_and_keeps_it_in_status() -> None:
    sim = held_at_10()
    for interval in range(30):
        # Per interval: 2 of the candidate's 40 requests fail, 4 of the incumbent's 360.
        decision = evaluated(
            sim, totals={"errors": totals(2 * interval, 4 * interval, 40 * interval, 360 * interval)}
        )
        record = decision.status.analysis[0]
        assert record.sequential is not None
        if decision.status.phase is Phase.ROLLED_BACK:
            break
    assert decision.status.phase is Phase.ROLLED_BACK, "5% against 1.1% never rejected"
    assert interval <= 10
    assert (record.sequential.candidate_events, record.sequential.incumbent_requests) == (
        2 * interval,
        360 * interval,
    )
    reason = decision.status.rollback_reason
    assert reason is not None
    # The breach as data: the tolerance the interval crossed, the interval and its evidence.
    assert (reason.rule, reason.threshold) == (BreachRule.SEQUENTIAL, 1.0)
    assert reason.bounds is not None and reason.bounds.rate_ratio_lower is not None
    assert reason.bounds.rate_ratio_lower >= 1.0
    assert reason.bounds.log_evidence >= math.log(1 / 0.05)


def counted(sim: Simulator, *readings: tuple) -> SequentialEvidence:
    """The evidence after one evaluation per reading of the totals."""
    for reading in readings:
        decision = evaluated(sim, totals={"errors": reading})
    evidence = decision.status.analysis[0].sequential
    assert evidence is not None
    return evidence


def counts_of(evidence: SequentialEvidence) -> tuple[float, ...]:
    return (
        evidence.candidate_events,
        evidence.candidate_requests,
        evidence.incumbent_events,
        evidence.incumbent_requests,
    )


def test_the_first_reading_is_the_baseline_and_each_later_one_counts_what_the_totals_grew_by() -> None:
    sim = held_at_10()
    baseline = counted(sim, totals(5, 7, 500, 900))
    assert counts_of(baseline) == (0, 0, 0, 0) and baseline.log_evidence == 0.0
    # Odd counts stay odd: each increment is counted once, however the intervals fall.
    later = counted(sim, totals(6, 10, 530, 1170), totals(9, 11, 570, 1530))
    assert counts_of(later) == (4, 70, 4, 630)
    assert later.candidate_totals is not None and later.candidate_totals.events == 9


def test_a_series_that_appears_with_its_first_event_counts_that_event() -> None:
    sim = held_at_10()
    evidence = counted(sim, totals(0, 0, 100, 900), totals(1, 0, 140, 1260))
    assert counts_of(evidence) == (1, 40, 0, 360)


def test_a_counter_that_went_down_starts_a_new_baseline_and_its_interval_counts_nothing() -> None:
    sim = held_at_10()
    before = counted(sim, totals(0, 2, 100, 900), totals(2, 6, 140, 1260))
    assert counts_of(before) == (2, 40, 4, 360)
    # An incumbent pod restarted: its errors total fell. Neither side's interval counts.
    reset = counted(sim, totals(4, 1, 180, 1500))
    assert counts_of(reset) == counts_of(before)
    assert reset.log_likelihood_ratios == before.log_likelihood_ratios
    after = counted(sim, totals(5, 4, 220, 1860))
    assert counts_of(after) == (3, 80, 7, 720)


def test_the_sequential_test_waits_when_counts_are_missing_and_keeps_its_baseline() -> None:
    sim = held_at_10()
    missing = (SideTotals(value(None), value(None)), SideTotals(value(360), value(3)))
    decision = evaluated(sim, totals={"errors": missing})
    assert decision.status.analysis[0].sequential is None
    assert decision.status.phase is not Phase.ROLLED_BACK
    counted(sim, totals(0, 0, 100, 900))
    evidence = counted(sim, missing, totals(3, 4, 180, 1620))
    assert counts_of(evidence) == (3, 80, 4, 720)  # the two intervals as one


def test_a_restarted_operator_goes_on_from_the_totals_in_status() -> None:
    readings = [totals(i // 3, i, 40 * i, 360 * i) for i in range(8)]

    def play(restart_every_tick: bool) -> SequentialEvidence:
        sim = Simulator(
            make_spec(weight(10), timed_pause("1h"), analysis=analysis_spec((TESTED,))),
            restart_every_tick=restart_every_tick,
        )
        sim.start()
        return counted(sim, *readings)

    restarted = play(restart_every_tick=True)
    assert restarted == play(restart_every_tick=False)
    assert counts_of(restarted) == (2, 280, 7, 2520)


def test_a_dry_run_metric_is_shown_but_never_fails_or_holds_the_rollout() -> None:
    shadow = MetricSpec.model_validate({"name": "shadow", "preset": "latencyP99", "max": 1, "dryRun": True})
    sim = started(ERROR_RATE, shadow)
    decision = evaluated(sim, Outcome.FAIL, metric="shadow")
    verdicts = {m.name: m.verdict for m in decision.status.analysis}
    assert verdicts == {"error-rate": Verdict.PASS, "shadow": Verdict.FAIL}
    assert decision.status.current_step_index == 1  # the step completed on error-rate alone
    assert decision.status.phase is not Phase.ROLLED_BACK


def test_a_per_step_failure_limit_starts_afresh_in_each_step() -> None:
    flaky = MetricSpec.model_validate(
        {
            "name": "error-rate",
            "preset": "errorRate",
            "max": 0.01,
            "failureLimit": 1,
            "failureLimitScope": "step",
        }
    )
    sim = started(flaky, steps=(weight(10), weight(50), weight(100)))
    assert sim.tick(analysis=Outcome.FAIL, after=INTERVAL).status.analysis[0].failures == 1
    moved = sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert moved.status.current_step_index == 1 and moved.status.analysis[0].failures == 0
    again = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert again.status.phase is not Phase.ROLLED_BACK  # one failure in this step, as allowed


def with_deadlines(sim: Simulator, **deadlines: dict) -> Simulator:
    sim.spec = sim.spec.model_copy(update={"progress_deadlines": ProgressDeadlines.model_validate(deadlines)})
    return sim


def never_available(after: str, action: str) -> Simulator:
    """A rollout Pending from its first tick, with a pending deadline."""
    sim = with_deadlines(Simulator(make_spec(weight(10))), pending={"after": after, "action": action})
    sim.available = False
    assert sim.tick().status.phase is Phase.PENDING
    return sim


def test_a_candidate_never_available_is_rolled_back_at_its_deadline() -> None:
    sim = never_available("10m", "rollback")
    assert sim.tick(after=timedelta(minutes=9)).status.phase is Phase.PENDING
    decision = sim.tick(after=timedelta(minutes=1))
    assert decision.status.phase is Phase.ROLLED_BACK
    assert decision.outcome is not None and decision.outcome.reason is Reason.PROGRESS_DEADLINE_EXCEEDED


def test_a_pending_deadline_may_fail_the_rollout() -> None:
    sim = never_available("1m", "fail")
    decision = sim.tick(after=timedelta(minutes=2))
    assert decision.status.phase is Phase.FAILED
    assert Reason.PROGRESS_DEADLINE_EXCEEDED in event_reasons(decision)


def test_inconclusive_past_its_deadline_pauses_until_resume() -> None:
    sim = with_deadlines(started(ERROR_RATE), inconclusive={"after": "2m", "action": "pause"})
    for _ in range(4):
        sim.tick(analysis=Outcome.FEW_REQUESTS, after=INTERVAL)
    assert sim.phase is Phase.PROGRESSING
    paused = sim.tick(analysis=Outcome.FEW_REQUESTS, after=INTERVAL)
    assert paused.status.phase is Phase.PAUSED
    assert "Inconclusive for 2m" in (paused.status.message or "")
    health = condition(paused.status.conditions, ConditionType.ANALYSIS_HEALTHY)
    assert health is not None and health.reason == Reason.PROGRESS_DEADLINE_EXCEEDED
    held = sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert (held.status.phase, held.status.current_step_index) == (Phase.PAUSED, 0)
    assert "Inconclusive for 2m" in (held.status.message or "")
    # Resumed, the passing analysis taken while held counts: the step completes at once.
    resumed = sim.tick(command=command(CommandAction.RESUME))
    assert (resumed.status.phase, resumed.status.current_step_index) == (Phase.PROGRESSING, 1)


def test_a_pending_deadline_that_pauses_holds_until_resume() -> None:
    sim = never_available("1m", "pause")
    paused = sim.tick(after=timedelta(minutes=2))
    assert paused.status.phase is Phase.PENDING
    assert Reason.PROGRESS_DEADLINE_EXCEEDED in event_reasons(paused)
    # Later ticks keep saying why it holds, and an Available candidate does not end the pause.
    still = sim.tick(after=INTERVAL)
    assert "run `modelgate resume`" in (still.status.message or "")
    sim.available = True
    held = sim.tick(after=INTERVAL)
    assert (held.status.phase, held.written) == (Phase.PENDING, None)
    assert "run `modelgate resume`" in (held.status.message or "")
    resumed = sim.tick(command=command(CommandAction.RESUME))
    assert (resumed.status.phase, resumed.status.current_weight) == (Phase.PROGRESSING, 10)
