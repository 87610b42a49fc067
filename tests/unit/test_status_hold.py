"""core.may_hold: which status changes may wait in memory (a new evaluation with the same verdicts, a
weight write verified) and which are written at once (a verdict, a failure count, a Prometheus error
count, a live weight the operator did not ask for, a step, an ended rollout), over statuses the
engine itself produced."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import MetricSpec, ModelRolloutStatus, Phase
from modelgate.core import may_hold
from modelgate.core.stepping import MAX_STATUS_HOLD
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    analysis_spec,
    make_spec,
    timed_pause,
    weight,
)

TOLERANT = MetricSpec(name="error-rate", preset="errorRate", max=0.01, failure_limit=3)


def pausing(*metrics: MetricSpec) -> Simulator:
    """A rollout at 20% in a long timed pause, its first evaluation there made."""
    analysis = analysis_spec(metrics) if metrics else None
    sim = Simulator(make_spec(weight(20), timed_pause("10m"), weight(100), analysis=analysis))
    sim.start()
    sim.tick_with_analysis(after=INTERVAL)  # the weight step's analysis completes it
    sim.tick_with_analysis(after=INTERVAL)
    assert sim.phase is Phase.PROGRESSING and sim.status.current_step_index == 1
    return sim


def next_evaluation(sim: Simulator, outcome: Outcome = Outcome.PASS) -> tuple[ModelRolloutStatus, ...]:
    before = sim.status
    sim.tick_with_analysis(outcome, after=INTERVAL)
    assert sim.status.last_analysis_at == sim.now
    return before, sim.status


def test_a_new_evaluation_with_the_same_verdicts_may_wait() -> None:
    sim = pausing()
    before, after = next_evaluation(sim)
    assert before != after
    assert may_hold(before, after, None, sim.now)


def test_a_held_change_is_written_once_it_has_waited_the_longest_hold() -> None:
    sim = pausing()
    before, after = next_evaluation(sim)
    assert may_hold(before, after, sim.now - MAX_STATUS_HOLD + timedelta(seconds=1), sim.now)
    assert not may_hold(before, after, sim.now - MAX_STATUS_HOLD, sim.now)


def test_a_changed_verdict_is_written_at_once() -> None:
    sim = pausing()
    before, after = next_evaluation(sim, Outcome.FEW_REQUESTS)
    assert after.analysis[0].verdict != before.analysis[0].verdict
    assert not may_hold(before, after, None, sim.now)


def test_a_failure_count_that_grows_under_the_same_verdict_is_written_at_once() -> None:
    sim = pausing(TOLERANT)
    next_evaluation(sim, Outcome.FAIL)
    before, after = next_evaluation(sim, Outcome.FAIL)
    assert (before.analysis[0].verdict, after.analysis[0].verdict) == ("Fail", "Fail")
    assert after.analysis[0].failures == before.analysis[0].failures + 1
    assert not may_hold(before, after, None, sim.now)


def test_a_prometheus_error_count_that_grows_is_written_at_once() -> None:
    sim = pausing()
    next_evaluation(sim, Outcome.ERROR)
    before, after = next_evaluation(sim, Outcome.ERROR)
    assert after.consecutive_prometheus_errors == before.consecutive_prometheus_errors + 1
    assert not may_hold(before, after, None, sim.now)


def test_a_breach_is_written_at_once() -> None:
    sim = pausing()
    before, after = next_evaluation(sim, Outcome.FAIL)
    assert after.phase is Phase.ROLLED_BACK
    assert not may_hold(before, after, None, sim.now)


def test_a_verified_weight_may_wait_and_one_the_operator_did_not_ask_for_may_not() -> None:
    sim = pausing()
    verified = sim.status
    assert verified.live_weight == verified.current_weight == 20
    before_the_write = verified.model_copy(update={"live_weight": 0})
    assert may_hold(before_the_write, verified, None, sim.now)
    moved = verified.model_copy(update={"live_weight": 30})  # another writer's
    assert not may_hold(verified, moved, None, sim.now)


def test_a_new_step_is_written_at_once() -> None:
    sim = Simulator(make_spec(weight(20), timed_pause("20s"), weight(100)))
    sim.start()
    sim.tick_with_analysis(after=INTERVAL)
    before = sim.status
    sim.tick_with_analysis(after=INTERVAL)
    assert sim.status.current_step_index != before.current_step_index
    assert not may_hold(before, sim.status, None, sim.now)


def test_an_ended_rollout_is_written_at_once() -> None:
    sim = pausing()
    ended = sim.status.model_copy(update={"phase": Phase.SUCCEEDED})
    verified = ended.model_copy(update={"live_weight": sim.status.current_weight})
    assert not may_hold(ended, verified, None, sim.now)


def test_with_no_hold_allowed_every_change_is_written() -> None:
    sim = pausing()
    before, after = next_evaluation(sim)
    assert not may_hold(before, after, None, sim.now, longest=timedelta())
