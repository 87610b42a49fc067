"""Starting a rollout: Pending until the candidate is Available, then step 0; a new spec.candidate
starts over from step 0 at weight 0."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import ConditionStatus, ModelRolloutStatus, Phase, WorkloadRef
from modelgate.core import ConditionType, decide
from modelgate.core.reasons import condition
from tests.unit.engine_support import (
    INTERVAL,
    T0,
    Outcome,
    Simulator,
    as_applied,
    effects,
    event_reasons,
    indefinite_pause,
    live,
    make_spec,
    observe,
    weight,
    weights_set,
    with_candidate,
)


def test_new_rollout_waits_in_pending_at_weight_zero() -> None:
    spec = make_spec(weight(10), weight(100))

    decision = as_applied(decide(spec, ModelRolloutStatus(), observe(live(0), available=False), T0))

    status = decision.status
    assert (status.phase, status.current_weight, status.current_step_index) == (Phase.PENDING, 0, 0)
    assert status.rollout_candidate == "chat-v2"
    assert status.observed_generation == 1
    assert weights_set(decision) == []  # already 0: nothing to write
    assert "NewRollout" in event_reasons(decision)
    available = condition(status.conditions, ConditionType.CANDIDATE_AVAILABLE)
    assert available is not None and available.status is ConditionStatus.FALSE


def test_pending_takes_traffic_off_the_candidate() -> None:
    spec = make_spec(weight(10))

    decision = as_applied(
        decide(spec, ModelRolloutStatus(), observe(live(30), available=False), T0), live(30)
    )

    assert decision.status.phase is Phase.PENDING
    assert weights_set(decision) == [0]


def test_pending_stays_pending_while_the_candidate_is_not_available() -> None:
    sim = Simulator(make_spec(weight(10)), available=False)
    for _ in range(5):
        decision = sim.tick(after=timedelta(minutes=1))
        assert decision.status.phase is Phase.PENDING
        assert "waiting for the candidate" in (decision.status.message or "")
    assert sim.applied == []


def test_pending_moves_to_step_zero_when_the_candidate_is_available() -> None:
    sim = Simulator(make_spec(weight(10), weight(100)), available=False)
    sim.tick()

    sim.available = True
    decision = sim.tick(after=timedelta(seconds=5))

    status = decision.status
    assert (status.phase, status.current_step_index, status.current_weight) == (Phase.PROGRESSING, 0, 10)
    assert status.step_started_at == sim.now
    assert weights_set(decision) == [10]
    assert {"RolloutStarted", "WeightSet"} <= set(event_reasons(decision))
    available = condition(status.conditions, ConditionType.CANDIDATE_AVAILABLE)
    assert available is not None and available.status is ConditionStatus.TRUE


def test_a_new_candidate_starts_a_new_rollout_from_step_zero() -> None:
    sim = Simulator(make_spec(weight(10), weight(50), weight(100), with_analysis=False))
    sim.start()
    sim.tick()  # step 0 live and complete: on to step 1 (50%)
    assert (sim.status.current_step_index, sim.live_weight) == (1, 50)

    sim.spec = with_candidate(sim.spec, "chat-v3")
    sim.generation = 2
    sim.available = False
    decision = sim.tick()

    status = decision.status
    assert (status.phase, status.current_step_index, status.current_weight) == (Phase.PENDING, 0, 0)
    assert status.rollout_candidate == "chat-v3"
    assert weights_set(decision) == [0]
    assert "NewRollout" in event_reasons(decision)

    sim.available = True
    sim.tick()
    assert (sim.status.phase, sim.status.current_step_index, sim.live_weight) == (Phase.PROGRESSING, 0, 10)


def test_a_candidate_that_changes_only_its_kind_starts_a_new_rollout() -> None:
    sim = Simulator(make_spec(weight(10), weight(50), weight(100), with_analysis=False))
    sim.start()
    sim.tick()
    assert sim.status.rollout_candidate == "chat-v2"

    pool = WorkloadRef.model_validate({"inferencePool": "chat-v2"})
    sim.spec = sim.spec.model_copy(update={"candidate": pool})
    sim.generation = 2
    sim.available = False
    decision = sim.tick()

    assert (decision.status.phase, decision.status.rollout_candidate) == (
        Phase.PENDING,
        "inferencepool/chat-v2",
    )
    assert "NewRollout" in event_reasons(decision)


def test_a_new_candidate_after_a_rollback_starts_again() -> None:
    sim = Simulator(make_spec(weight(10), weight(100)))
    sim.start()
    sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert (sim.status.phase, sim.live_weight) == (Phase.ROLLED_BACK, 0)

    sim.spec = with_candidate(sim.spec, "chat-v3")
    sim.generation = 2
    decision = sim.tick()

    assert (decision.status.phase, decision.status.current_weight) == (Phase.PROGRESSING, 10)
    assert decision.status.rollback_reason is None


def test_a_new_candidate_records_when_it_started_and_keeps_the_earlier_rollout() -> None:
    """`modelgate report` covers the current rollout from rolloutStartedAt and lists the earlier ones."""
    sim = Simulator(make_spec(weight(10), weight(100)))
    sim.start()
    first_started = sim.status.rollout_started_at
    assert first_started is not None
    sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert sim.status.phase is Phase.ROLLED_BACK

    sim.spec = with_candidate(sim.spec, "chat-v3")
    sim.generation = 2
    sim.tick(after=INTERVAL)

    assert sim.status.rollout_started_at == sim.now > first_started
    earlier = [(r.candidate, r.started_at, r.phase) for r in sim.status.earlier_rollouts]
    assert earlier == [("chat-v2", first_started, Phase.ROLLED_BACK)]


def test_a_spec_edit_that_removes_the_current_step_starts_again_from_step_zero() -> None:
    sim = Simulator(make_spec(weight(10), weight(30), indefinite_pause(), weight(100), with_analysis=False))
    sim.start()
    sim.tick()
    sim.tick()
    assert (sim.phase, sim.status.current_step_index, sim.live_weight) == (Phase.PAUSED, 2, 30)

    sim.spec = make_spec(weight(10), weight(100), with_analysis=False)
    sim.generation = 2
    decision = sim.tick()

    status = decision.status
    assert (status.phase, status.current_step_index, status.current_weight) == (Phase.PROGRESSING, 0, 10)
    assert weights_set(decision) == [10]
    assert "SpecChanged" in event_reasons(decision)


def test_a_spec_edit_that_keeps_the_current_step_carries_on() -> None:
    sim = Simulator(make_spec(weight(10), indefinite_pause(), weight(100), with_analysis=False))
    sim.start()
    sim.tick()
    assert (sim.phase, sim.status.current_step_index) == (Phase.PAUSED, 1)

    sim.spec = make_spec(weight(10), indefinite_pause(), weight(50), weight(100), with_analysis=False)
    sim.generation = 2
    decision = sim.tick()

    assert (decision.status.phase, decision.status.current_step_index, effects(decision)) == (
        Phase.PAUSED,
        1,
        (None, ()),
    )
