"""The rollout's history as data (status.stepStarts, status.weightChanges): every step entered and
every weight asked for, at the tick it happened, of the current rollout only; checked against what
the simulated operator saw tick by tick (the step index and start of each status, the weights it
applied), not against the engine's own bookkeeping."""

from __future__ import annotations

from datetime import datetime, timedelta

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.api.history import MAX_WEIGHT_CHANGES, WeightChange
from modelgate.core import CommandAction
from modelgate.core.tick import note_history
from tests.unit.engine_support import (
    INTERVAL,
    T0,
    Outcome,
    Simulator,
    command,
    make_spec,
    timed_pause,
    weight,
    with_candidate,
)

ENDED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)


def run_until_ended(sim: Simulator, outcome: Outcome = Outcome.PASS) -> list[ModelRolloutStatus]:
    statuses = [sim.start().status]
    while sim.phase not in ENDED:
        assert sim.now < T0 + timedelta(hours=1), sim.status.message
        statuses.append(sim.tick_with_analysis(outcome, after=INTERVAL / 2).status)
    return statuses


def step_starts(status: ModelRolloutStatus) -> list[tuple[int, datetime]]:
    """(step, start) as status.stepStarts records them, in seconds after the rollout's start."""
    assert status.rollout_started_at is not None
    return [
        (step, status.rollout_started_at + timedelta(seconds=s)) for step, s in enumerate(status.step_starts)
    ]


def weight_changes(status: ModelRolloutStatus) -> list[tuple[int, datetime]]:
    assert status.rollout_started_at is not None
    return [
        (c.weight, status.rollout_started_at + timedelta(seconds=c.seconds)) for c in status.weight_changes
    ]


def seen_step_starts(statuses: list[ModelRolloutStatus]) -> list[tuple[int, datetime]]:
    """Each (step, start) the statuses showed, in order."""
    seen: list[tuple[int, datetime]] = []
    for status in statuses:
        if (
            status.step_started_at is not None
            and (status.current_step_index, status.step_started_at) not in seen
        ):
            seen.append((status.current_step_index, status.step_started_at))
    return seen


def test_a_promotion_records_each_step_start_and_each_weight_it_asked_for() -> None:
    sim = Simulator(make_spec(weight(20), timed_pause("1m"), weight(60), weight(100)))

    statuses = run_until_ended(sim)

    final = statuses[-1]
    assert final.phase is Phase.SUCCEEDED
    assert step_starts(final) == seen_step_starts(statuses)
    assert len(final.step_starts) == 5  # and the end of the last step
    assert [c.weight for c in final.weight_changes] == [20, 60, 100] == sim.applied
    started = dict(step_starts(final))
    assert [at for _, at in weight_changes(final)] == [started[0], started[2], started[3]]


def test_a_rollback_records_the_weight_going_back_to_zero_when_it_happened() -> None:
    sim = Simulator(make_spec(weight(20), weight(60), weight(100)))
    sim.start()
    sim.tick_with_analysis(Outcome.PASS, after=INTERVAL)
    rolled_back = sim.tick_with_analysis(Outcome.FAIL, after=INTERVAL).status

    assert rolled_back.phase is Phase.ROLLED_BACK
    assert rolled_back.rollback_reason is not None
    assert [c.weight for c in rolled_back.weight_changes] == [*sim.applied]
    assert weight_changes(rolled_back)[-1] == (0, rolled_back.rollback_reason.time)


def test_a_new_rollout_on_the_same_object_starts_its_history_afresh() -> None:
    spec = make_spec(weight(20), weight(100))
    sim = Simulator(spec)
    run_until_ended(sim)
    sim.spec = with_candidate(spec, "chat-v3")
    sim.generation += 1

    restarted = sim.tick(after=timedelta(minutes=5)).status

    assert restarted.rollout_candidate == "chat-v3"
    assert step_starts(restarted) == [(0, sim.now)]
    assert weight_changes(restarted) == [(20, sim.now)]


def test_retry_after_a_rollback_keeps_only_the_retried_rollout() -> None:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()
    sim.tick_with_analysis(Outcome.FAIL, after=INTERVAL)

    retried = sim.tick(command=command(CommandAction.RETRY), after=timedelta(minutes=5)).status

    assert step_starts(retried) == [(0, sim.now)]
    assert [c.weight for c in retried.weight_changes] == [20]


def test_the_weight_history_keeps_the_newest_changes_within_its_bound() -> None:
    changes = tuple(WeightChange(weight=w % 2 * 10, seconds=w) for w in range(MAX_WEIGHT_CHANGES))
    before = ModelRolloutStatus(
        rollout_started_at=T0, current_weight=changes[-1].weight, weight_changes=changes
    )
    now = T0 + timedelta(hours=1)

    after = note_history(before, before.model_copy(update={"current_weight": 55}), now)

    assert len(after.weight_changes) == MAX_WEIGHT_CHANGES
    assert after.weight_changes[-1] == WeightChange(weight=55, seconds=3600)
    assert after.weight_changes[0] == changes[1]


def test_a_rollout_begun_before_the_record_adds_no_step_starts_it_cannot_place() -> None:
    """Mid-rollout at step 2 with no record (an older operator's status): its next step is not
    recorded as if it were step 0."""
    at_step_two = ModelRolloutStatus(
        rollout_started_at=T0, current_step_index=2, step_started_at=T0 + timedelta(minutes=1)
    )
    now = T0 + timedelta(minutes=2)
    entered = at_step_two.model_copy(update={"current_step_index": 3, "step_started_at": now})

    assert note_history(at_step_two, entered, now).step_starts == ()
