"""Gradual rollback: an abort or a deadline's rollback steps the candidate down to 0 over the duration,
from status timestamps alone; a breach, a rollback on Prometheus errors or a second abort sets 0 at once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelgate.api import ModelRolloutSpec, Phase, RollingBack
from modelgate.core import CommandAction, Reason
from modelgate.core.endings import STEP_INTERVAL, weight_at
from modelgate.core.stepping import next_wakeup
from tests.unit.engine_support import (
    INTERVAL,
    T0,
    Outcome,
    Simulator,
    command,
    event_reasons,
    indefinite_pause,
    make_spec,
    weight,
)

DURATION = timedelta(seconds=10)


def gradual_spec(duration: str = "10s", **kwargs: object) -> ModelRolloutSpec:
    spec = make_spec(weight(50), indefinite_pause(), weight(100), **kwargs)  # type: ignore[arg-type]
    rollback = spec.rollback.model_validate(
        {**spec.rollback.model_dump(by_alias=True), "gradual": {"duration": duration}}
    )
    return spec.model_copy(update={"rollback": rollback})


def at_50(spec: ModelRolloutSpec | None = None, *, restart_every_tick: bool = False) -> Simulator:
    sim = Simulator(spec or gradual_spec(), restart_every_tick=restart_every_tick)
    sim.start()
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert (sim.phase, sim.live_weight) == (Phase.PAUSED, 50)
    return sim


@pytest.mark.parametrize("restart_every_tick", [False, True])
def test_abort_steps_the_candidate_down_over_the_duration(restart_every_tick: bool) -> None:
    sim = at_50(restart_every_tick=restart_every_tick)
    decision = sim.tick(command=command(CommandAction.ABORT))
    assert sim.phase is Phase.ROLLED_BACK
    assert decision.outcome is not None and decision.outcome.reason is Reason.ABORTED
    assert sim.status.rolling_back is not None and sim.status.rolling_back.from_weight == 50
    assert sim.live_weight == 50  # nothing moves at the first instant
    weights = []
    while sim.status.rolling_back is not None:
        sim.tick(analysis=Outcome.PASS if sim.analysis_due() else None, after=timedelta(seconds=1))
        weights.append(sim.live_weight)
    assert weights == [45, 40, 35, 30, 25, 20, 15, 10, 5, 0]
    assert sim.now - T0 - INTERVAL == DURATION  # 0 exactly at the end, not before
    assert Reason.ROLLBACK_COMPLETED in event_reasons(sim.ticks[-1])
    assert sim.status.message is not None and sim.status.message.startswith("rolled back: aborted")


def test_a_breach_during_the_step_down_sets_0_at_once() -> None:
    sim = at_50()
    sim.tick(command=command(CommandAction.ABORT))
    sim.tick(after=timedelta(seconds=3))
    assert sim.live_weight == 35
    decision = sim.tick(analysis=Outcome.FAIL, after=timedelta(milliseconds=10))
    assert decision.written == 0 and sim.status.rolling_back is None
    assert decision.outcome is not None and decision.outcome.reason is Reason.METRIC_BREACH
    assert sim.status.rollback_reason is not None and sim.status.rollback_reason.metric == "error-rate"


def test_analysis_goes_on_during_the_step_down() -> None:
    sim = at_50(gradual_spec("5m"))
    sim.tick(command=command(CommandAction.ABORT))
    sim.advance(INTERVAL)
    assert sim.analysis_due()
    sim.tick(analysis=Outcome.PASS)
    assert sim.status.rolling_back is not None and 0 < (sim.live_weight or 0) < 50


def test_a_breach_in_the_aborting_tick_sets_0_at_once() -> None:
    sim = at_50()
    decision = sim.tick(command=command(CommandAction.ABORT), analysis=Outcome.FAIL, after=INTERVAL)
    assert decision.written == 0 and sim.status.rolling_back is None
    assert sim.status.rollback_reason is not None and sim.status.rollback_reason.metric == "error-rate"


def test_a_second_abort_sets_0_at_once() -> None:
    sim = at_50()
    sim.tick(command=command(CommandAction.ABORT, "first"))
    decision = sim.tick(command=command(CommandAction.ABORT, "second"), after=timedelta(seconds=1))
    assert decision.written == 0 and sim.status.rolling_back is None
    assert sim.status.last_command is not None and "at once" in sim.status.last_command.message


def test_a_breach_rolls_back_at_once_even_with_gradual_set() -> None:
    sim = at_50()
    decision = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert decision.written == 0 and sim.status.rolling_back is None


def test_prometheus_errors_roll_back_at_once() -> None:
    sim = at_50(gradual_spec(on_prometheus_error="rollback", max_consecutive_errors=1))
    decision = sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    assert sim.phase is Phase.ROLLED_BACK
    assert decision.written == 0 and sim.status.rolling_back is None


def test_retry_during_the_step_down_starts_again_at_0() -> None:
    sim = at_50()
    sim.tick(command=command(CommandAction.ABORT, "abort"))
    sim.tick(after=timedelta(seconds=2))
    assert sim.live_weight == 40
    decision = sim.tick(command=command(CommandAction.RETRY, "retry"))
    assert sim.status.rolling_back is None and sim.phase is Phase.PROGRESSING
    assert decision.written == 50  # step 0 again: the candidate was Available all along


def test_wakeups_follow_the_step_down() -> None:
    sim = at_50()
    sim.tick(command=command(CommandAction.ABORT))
    assert next_wakeup(sim.spec, sim.status, sim.now) == STEP_INTERVAL


@given(
    from_weight=st.integers(1, 100),
    seconds=st.integers(1, 3600),
    elapsed=st.lists(st.floats(0, 1.2), min_size=2, max_size=20),
)
def test_the_weight_falls_monotonically_and_reaches_0_at_the_end(
    from_weight: int, seconds: int, elapsed: list[float]
) -> None:
    duration = timedelta(seconds=seconds)
    rolling = RollingBack(started_at=T0, from_weight=from_weight, ends_at=T0 + duration)
    weights = [weight_at(rolling, T0 + duration * fraction) for fraction in sorted(elapsed)]
    assert all(0 <= w <= from_weight for w in weights)
    assert weights == sorted(weights, reverse=True)
    assert weight_at(rolling, T0) == from_weight
    assert weight_at(rolling, T0 + duration) == 0
    assert weight_at(rolling, T0 + duration - timedelta(microseconds=1)) >= 1


def test_a_deadlines_rollback_steps_down_too() -> None:
    spec = gradual_spec(with_analysis=True)
    deadlines = {"inconclusive": {"after": "1m", "action": "rollback"}}
    spec = ModelRolloutSpec.model_validate({**spec.model_dump(by_alias=True), "progressDeadlines": deadlines})
    sim = Simulator(spec)
    sim.start()
    while sim.phase is not Phase.ROLLED_BACK:
        sim.tick_with_analysis(Outcome.EMPTY, after=INTERVAL)
    assert sim.ticks[-1].outcome is not None
    assert sim.ticks[-1].outcome.reason is Reason.PROGRESS_DEADLINE_EXCEEDED
    assert sim.status.rolling_back is not None and sim.live_weight == 50
    sim.tick(after=DURATION / 2)
    assert sim.live_weight == 25
