"""When the operator looks again: analysis is due while the candidate takes traffic in an active
rollout, and the next wakeup is the soonest of pause end, next analysis and RESYNC, never below
MIN_WAKEUP."""

from __future__ import annotations

from datetime import timedelta

import pytest

from modelgate.api import ModelRolloutStatus, Phase, ProgressDeadlines
from modelgate.api.analysis_check import AnalysisCheck
from modelgate.core import analysis_due, next_wakeup
from modelgate.core.judging import digest
from modelgate.core.stepping import (
    FINISHED_RESYNC,
    MIN_WAKEUP,
    RESYNC,
    WRITE_RETRY,
    pause_ends_at,
    scheduled_at,
)
from tests.unit.engine_support import (
    INTERVAL,
    T0,
    Outcome,
    Simulator,
    analysis_spec,
    indefinite_pause,
    make_spec,
    timed_pause,
    weight,
)

SPEC = make_spec(weight(20), timed_pause("5s"), indefinite_pause(), weight(100))
FAST = make_spec(weight(20), weight(100), analysis=analysis_spec(interval="4s"))


def status(phase: Phase, *, step: int = 0, weight_: int = 20, **fields: object) -> ModelRolloutStatus:
    return ModelRolloutStatus(
        phase=phase, current_step_index=step, current_weight=weight_, step_started_at=T0, **fields
    )


# -- analysis_due -----------------------------------------------------------------------------------
@pytest.mark.parametrize("phase", [Phase.PROGRESSING, Phase.PAUSED])
@pytest.mark.parametrize("last", [None, T0 - timedelta(minutes=5)])
def test_a_steps_first_analysis_is_one_interval_after_the_step_started(phase: Phase, last: object) -> None:
    # Not at once, even when the last run is older than an interval: a window that ends at the step's
    # start holds only the previous step's traffic.
    started = status(phase, last_analysis_at=last)
    assert not analysis_due(SPEC, started, T0)
    assert not analysis_due(SPEC, started, T0 + timedelta(seconds=29))
    assert analysis_due(SPEC, started, T0 + timedelta(seconds=30))
    fast = status(phase, last_analysis_at=last)
    assert next_wakeup(FAST, fast, T0 + timedelta(seconds=1)) == timedelta(seconds=3)


def test_analysis_is_due_one_interval_after_the_last() -> None:
    done = status(Phase.PROGRESSING, last_analysis_at=T0 + timedelta(seconds=40))
    assert not analysis_due(SPEC, done, T0 + timedelta(seconds=69))
    assert analysis_due(SPEC, done, T0 + timedelta(seconds=70))


def test_analysis_is_due_as_soon_as_the_step_is_one_interval_old() -> None:
    # The last run (10s into the step) cannot complete it; the first that can is due at 30s, not 40s.
    early = status(Phase.PROGRESSING, last_analysis_at=T0 + timedelta(seconds=10))
    assert not analysis_due(SPEC, early, T0 + timedelta(seconds=29))
    assert analysis_due(SPEC, early, T0 + timedelta(seconds=30))
    assert next_wakeup(SPEC, early, T0 + timedelta(seconds=25)) == timedelta(seconds=5)


@pytest.mark.parametrize("phase", [Phase.PENDING, Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED])
def test_analysis_is_not_due_outside_an_active_rollout(phase: Phase) -> None:
    assert not analysis_due(SPEC, status(phase), T0)


def test_analysis_is_not_due_without_traffic_or_metrics() -> None:
    assert not analysis_due(SPEC, status(Phase.PROGRESSING, weight_=0), T0)
    assert not analysis_due(make_spec(weight(20), with_analysis=False), status(Phase.PROGRESSING), T0)


# -- pause_ends_at and next_wakeup ---------------------------------------------------------------------
def test_pause_ends_at_only_for_a_started_timed_pause() -> None:
    assert pause_ends_at(SPEC, status(Phase.PROGRESSING, step=1)) == T0 + timedelta(seconds=5)
    assert pause_ends_at(SPEC, status(Phase.PROGRESSING, step=0)) is None  # a setWeight step
    assert pause_ends_at(SPEC, status(Phase.PAUSED, step=2)) is None  # indefinite
    assert pause_ends_at(SPEC, status(Phase.SUCCEEDED, step=4)) is None  # past the last step
    unstarted = ModelRolloutStatus(phase=Phase.PROGRESSING, current_step_index=1)
    assert pause_ends_at(SPEC, unstarted) is None


def test_next_wakeup_is_the_pause_end_when_that_comes_first() -> None:
    paused = status(Phase.PROGRESSING, step=1, last_analysis_at=T0)
    assert next_wakeup(SPEC, paused, T0 + timedelta(seconds=2)) == timedelta(seconds=3)


def test_next_wakeup_is_the_next_analysis_when_that_comes_first() -> None:
    analysed = status(Phase.PROGRESSING, last_analysis_at=T0 + timedelta(seconds=4))
    assert next_wakeup(FAST, analysed, T0 + timedelta(seconds=5)) == timedelta(seconds=3)


def test_steps_last_one_interval_when_the_operator_sleeps_as_told() -> None:
    sim = Simulator(make_spec(weight(20), weight(40), timed_pause("45s"), weight(100)))
    sim.start()
    completed_at = []
    while sim.phase is not Phase.SUCCEEDED and len(sim.ticks) < 50:
        index = sim.status.current_step_index
        sim.tick_with_analysis(Outcome.PASS, after=next_wakeup(sim.spec, sim.status, sim.now))
        if sim.status.current_step_index != index:
            completed_at.append(sim.now - T0)
    assert completed_at == [timedelta(seconds=s) for s in (30, 60, 105, 135)]


def test_without_analysis_steps_end_when_due_not_at_the_next_resync() -> None:
    """A setWeight step without analysis is complete once its weight is live: the tick after the write
    comes at once, not a resync later; a timed pause ends on time."""
    sim = Simulator(make_spec(weight(20), timed_pause("15s"), weight(60), weight(100), with_analysis=False))
    sim.tick(after=timedelta())
    completed_at = []
    while sim.phase is not Phase.SUCCEEDED and len(sim.ticks) < 50:
        index = sim.status.current_step_index
        sim.tick(after=next_wakeup(sim.spec, sim.status, sim.now))
        if sim.status.current_step_index != index:
            completed_at.append(sim.now - T0)
    pause = timedelta(seconds=15)
    assert completed_at == [MIN_WAKEUP, MIN_WAKEUP + pause, 2 * MIN_WAKEUP + pause, 3 * MIN_WAKEUP + pause]


def test_a_step_held_by_an_unavailable_candidate_waits_for_a_resync() -> None:
    sim = Simulator(make_spec(weight(20), weight(100), with_analysis=False))
    sim.tick(after=timedelta())
    sim.available = False
    sim.tick(after=MIN_WAKEUP)
    assert sim.status.current_step_index == 0
    assert next_wakeup(sim.spec, sim.status, sim.now) == RESYNC


@pytest.mark.parametrize("with_analysis", [False, True])
def test_a_pause_held_past_its_end_does_not_spin(with_analysis: bool) -> None:
    """Once a timed pause is over, its end is no reason to look again: the step is held by something
    else (here the candidate), and the rollout is looked at on a resync, an analysis or an event,
    not every MIN_WAKEUP."""
    sim = Simulator(make_spec(weight(20), timed_pause("5s"), weight(100), with_analysis=with_analysis))
    sim.tick(after=timedelta())
    sim.tick_with_analysis(after=INTERVAL if with_analysis else MIN_WAKEUP)
    assert sim.status.current_step_index == 1
    sim.available = False
    sim.tick_with_analysis(after=timedelta(seconds=60))
    assert sim.status.current_step_index == 1
    assert next_wakeup(sim.spec, sim.status, sim.now) == RESYNC  # sooner than the 30 s interval


def test_a_finished_rollout_sleeps_long_unless_a_write_did_not_take() -> None:
    # Its route's watch wakes it when the route changes (loops.notice_route).
    for phase in (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED):
        assert next_wakeup(SPEC, status(phase, step=4, weight_=100), T0) == FINISHED_RESYNC
    not_taken = status(Phase.SUCCEEDED, step=4, weight_=100, live_weight=60)
    assert next_wakeup(SPEC, not_taken, T0) == WRITE_RETRY


def test_next_wakeup_is_resync_when_nothing_comes_sooner() -> None:
    checked = AnalysisCheck(analysis=digest(SPEC.analysis), at=T0)  # its queries answered
    assert next_wakeup(SPEC, ModelRolloutStatus(phase=Phase.PENDING, analysis_check=checked), T0) == RESYNC
    analysed = status(Phase.PROGRESSING, last_analysis_at=T0)
    assert next_wakeup(SPEC, analysed, T0) == RESYNC  # the 30s interval is further away


def test_next_wakeup_never_goes_below_the_floor() -> None:
    overdue = status(Phase.PROGRESSING, step=1, last_analysis_at=T0)
    assert next_wakeup(SPEC, overdue, T0 + timedelta(hours=1)) == MIN_WAKEUP
    assert next_wakeup(
        SPEC, status(Phase.PROGRESSING, step=1), T0 + timedelta(seconds=5) - MIN_WAKEUP / 2
    ) == (MIN_WAKEUP)


def test_next_wakeup_ignores_a_pause_of_a_finished_rollout() -> None:
    aborted_in_pause = status(Phase.ROLLED_BACK, step=1, weight_=0)
    assert next_wakeup(SPEC, aborted_in_pause, T0 + timedelta(seconds=1)) == FINISHED_RESYNC


def test_next_wakeup_is_a_running_progress_deadline_and_not_one_that_passed() -> None:
    deadlines = ProgressDeadlines.model_validate({"pending": {"after": "3s", "action": "rollback"}})
    timed = make_spec(weight(20), with_analysis=False).model_copy(update={"progress_deadlines": deadlines})
    pending = ModelRolloutStatus(phase=Phase.PENDING, pending_since=T0)
    assert next_wakeup(timed, pending, T0 + timedelta(seconds=1)) == timedelta(seconds=2)
    # Passed (and acted on: a pause holds): no busy loop at the floor.
    assert next_wakeup(timed, pending, T0 + timedelta(seconds=4)) == RESYNC


# -- scheduled_at: the order a restarted operator ticks its rollouts in -----------------------------
TIMED = make_spec(weight(20), timed_pause("5s"), indefinite_pause(), weight(100), with_analysis=False)


def test_a_pause_that_ended_is_still_scheduled_at_its_end_so_the_longest_overdue_comes_first() -> None:
    paused = status(Phase.PROGRESSING, step=1)
    assert scheduled_at(TIMED, paused) == T0 + timedelta(seconds=5)
    # next_wakeup leaves out a pause that is over; the order after a restart must not
    assert next_wakeup(TIMED, paused, T0 + timedelta(minutes=1)) == RESYNC


def test_the_next_analysis_run_is_scheduled_when_it_is_sooner_than_the_pause_end() -> None:
    spec = make_spec(weight(20), timed_pause("1m"), weight(100), analysis=analysis_spec(interval="4s"))
    assert scheduled_at(spec, status(Phase.PROGRESSING, step=1)) == T0 + timedelta(seconds=4)


@pytest.mark.parametrize("phase", [Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED])
def test_a_finished_rollout_is_scheduled_for_nothing(phase: Phase) -> None:
    assert scheduled_at(TIMED, status(phase, step=1)) is None


def test_an_indefinite_pause_is_scheduled_for_nothing() -> None:
    assert scheduled_at(TIMED, status(Phase.PAUSED, step=2)) is None
