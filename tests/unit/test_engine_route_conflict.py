"""Another writer of the route's weights: written back once, then held (no writes, no steps) with
RouteConflict until a command; the operator's own writes are never taken for another writer's."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import ConditionStatus, ModelRolloutSpec, Phase
from modelgate.core import CommandAction, ConditionType, LiveRoute, Reason, next_wakeup
from modelgate.core.reasons import condition
from modelgate.core.stepping import RESYNC
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    command,
    event_reasons,
    indefinite_pause,
    make_spec,
    simulator_in,
    timed_pause,
    weight,
    weights_set,
)

GITOPS = "argocd-controller"


def spec() -> ModelRolloutSpec:
    return make_spec(weight(20), timed_pause("1m"), weight(60), weight(100), with_analysis=False)


def at_20() -> Simulator:
    sim = Simulator(spec())
    sim.start()
    sim.tick()  # the weight is live: the pause starts
    assert (sim.status.current_step_index, sim.status.current_weight) == (1, 20)  # pausing at 20
    return sim


def overwrite(sim: Simulator, candidate_weight: int, writer: str | None = GITOPS) -> None:
    sim.route = LiveRoute(100 - candidate_weight, candidate_weight, writer)


def route_reason(sim: Simulator) -> tuple[ConditionStatus, str] | None:
    ready = condition(sim.status.conditions, ConditionType.ROUTE_READY)
    return (ready.status, ready.reason) if ready else None


def held(sim: Simulator) -> Simulator:
    overwrite(sim, 37)
    sim.tick()
    overwrite(sim, 41)
    sim.tick()
    return sim


def test_a_first_overwrite_is_written_back_once_and_named() -> None:
    sim = at_20()
    overwrite(sim, 37)

    decision = sim.tick()

    assert weights_set(decision) == [20]
    assert decision.status.phase is Phase.PROGRESSING
    assert route_reason(sim) == (ConditionStatus.FALSE, Reason.ROUTE_OVERWRITTEN)
    event = next(e for e in decision.events if e.reason is Reason.ROUTE_OVERWRITTEN)
    assert GITOPS in event.message and "37" in event.message


def test_a_second_overwrite_holds_the_rollout_without_writing() -> None:
    sim = at_20()
    overwrite(sim, 37)
    sim.tick()
    overwrite(sim, 41)

    decision = sim.tick()

    assert weights_set(decision) == []
    assert decision.status.phase is Phase.PAUSED
    assert route_reason(sim) == (ConditionStatus.FALSE, Reason.ROUTE_CONFLICT)
    assert GITOPS in (decision.status.message or "") and "resume" in (decision.status.message or "")
    assert event_reasons(decision) == [Reason.ROUTE_CONFLICT]


def test_while_held_nothing_is_written_said_again_or_advanced() -> None:
    sim = held(at_20())
    for candidate_weight in (5, 90, 41):
        overwrite(sim, candidate_weight)
        decision = sim.tick(after=timedelta(minutes=2))  # well past the pause's end
        assert (weights_set(decision), decision.events) == ([], ())
        assert (decision.status.phase, decision.status.current_step_index) == (Phase.PAUSED, 1)


def test_resume_writes_the_weight_again_and_the_steps_go_on() -> None:
    sim = held(at_20())

    resumed = sim.tick(command=command(CommandAction.RESUME))

    assert weights_set(resumed) == [20]
    assert resumed.status.phase is Phase.PROGRESSING
    assert route_reason(sim) == (ConditionStatus.TRUE, Reason.ROUTE_FOUND)
    sim.tick(after=timedelta(minutes=1))
    assert sim.status.current_weight == 60


def test_promote_ends_a_hold_too() -> None:
    sim = held(at_20())

    promoted = sim.tick(command=command(CommandAction.PROMOTE))

    assert weights_set(promoted) == [60]
    assert promoted.status.current_step_index == 2


def test_a_writer_still_at_it_after_resume_is_written_back_once_more_then_held() -> None:
    sim = held(at_20())
    sim.tick(command=command(CommandAction.RESUME))
    overwrite(sim, 37)
    assert weights_set(sim.tick()) == [20]
    overwrite(sim, 41)
    assert weights_set(sim.tick()) == []
    assert route_reason(sim) == (ConditionStatus.FALSE, Reason.ROUTE_CONFLICT)


def test_a_breach_while_held_still_rolls_back_to_zero() -> None:
    sim = Simulator(make_spec(weight(20), indefinite_pause(), weight(100)))
    sim.start()
    held(sim)

    decision = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)

    assert decision.status.phase is Phase.ROLLED_BACK
    assert weights_set(decision) == [0]


def test_the_operators_own_unrecorded_write_is_not_another_writers() -> None:
    # Killed between writing the route and writing status: the route names no other writer.
    sim = at_20()
    overwrite(sim, 60, writer=None)

    decision = sim.tick()

    assert Reason.ROUTE_OVERWRITTEN not in event_reasons(decision)
    assert route_reason(sim) == (ConditionStatus.TRUE, Reason.ROUTE_FOUND)


def test_another_writer_setting_the_wanted_weight_is_no_conflict() -> None:
    sim = at_20()
    sim.route = LiveRoute(95, 5, None)
    sim.tick()  # the operator's write did not take (a webhook): it wants 20, the route carries 5
    overwrite(sim, 20)

    decision = sim.tick()

    assert Reason.ROUTE_OVERWRITTEN not in event_reasons(decision)


def test_a_finished_rollout_holds_its_route_too_and_resume_writes_it_again() -> None:
    sim = simulator_in(Phase.SUCCEEDED)
    held(sim)
    overwrite(sim, 41)
    assert weights_set(sim.tick(after=timedelta(minutes=1))) == []
    assert sim.phase is Phase.SUCCEEDED

    resumed = sim.tick(command=command(CommandAction.RESUME))

    assert (resumed.status.phase, weights_set(resumed)) == (Phase.SUCCEEDED, [100])


def test_a_held_rollout_is_not_retried_every_second() -> None:
    sim = held(at_20())
    assert sim.status.live_weight != sim.status.current_weight
    assert next_wakeup(sim.spec, sim.status, sim.now) == RESYNC
