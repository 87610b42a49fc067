"""Route problems: an active rollout ends Failed without writing weights and stays Failed until the
spec changes or `retry`; a finished rollout keeps its phase and only reports the route."""

from __future__ import annotations

from datetime import timedelta

import pytest

from modelgate.api import ConditionStatus, Phase
from modelgate.core import CommandAction, ConditionType, Reason, RouteProblem
from modelgate.core.reasons import condition
from tests.unit.engine_support import (
    INTERVAL,
    ROUTE_NOT_FOUND,
    Outcome,
    Simulator,
    command,
    effects,
    event_reasons,
    live,
    round_trip,
    simulator_in,
    weights_set,
)


def route_ready(sim: Simulator) -> tuple[ConditionStatus, str] | None:
    ready = condition(sim.status.conditions, ConditionType.ROUTE_READY)
    return (ready.status, ready.reason) if ready else None


@pytest.mark.parametrize("phase", [Phase.PENDING, Phase.PROGRESSING, Phase.PAUSED])
def test_a_route_problem_fails_an_active_rollout_without_writing_weights(phase: Phase) -> None:
    sim = simulator_in(phase)
    sim.route = ROUTE_NOT_FOUND

    decision = sim.tick(analysis=Outcome.PASS if sim.analysis_due() else None, after=INTERVAL)

    assert decision.status.phase is Phase.FAILED
    assert weights_set(decision) == []
    assert decision.status.message == ROUTE_NOT_FOUND.message
    assert route_ready(sim) == (ConditionStatus.FALSE, "RouteNotFound")
    assert "RouteNotFound" in event_reasons(decision)


def test_failed_returns_the_traffic_once_the_route_works_and_stays_failed_until_the_generation_changes() -> (
    None
):
    sim = simulator_in(Phase.PROGRESSING)
    sim.route = ROUTE_NOT_FOUND
    failed = sim.tick()
    assert (failed.status.phase, failed.status.current_weight, failed.written) == (Phase.FAILED, 0, None)

    sim.route = live(20)  # fixed by hand, but the spec is the same: Failed gives the traffic back
    returned = sim.tick(after=timedelta(minutes=1))
    assert (returned.status.phase, effects(returned)) == (Phase.FAILED, (0, ()))
    for _ in range(3):
        decision = sim.tick(after=timedelta(minutes=1))
        assert (decision.status.phase, effects(decision)) == (Phase.FAILED, (None, ()))

    sim.generation = 2
    decision = sim.tick()

    assert (decision.status.phase, decision.status.current_step_index) == (Phase.PROGRESSING, 0)
    assert "SpecChanged" in event_reasons(decision)
    assert decision.status.observed_generation == 2


def test_failed_starts_again_on_retry() -> None:
    sim = simulator_in(Phase.PROGRESSING)
    sim.route = ROUTE_NOT_FOUND
    sim.tick()
    sim.route = live(20)

    decision = sim.tick(command=command(CommandAction.RETRY))

    assert (decision.status.phase, decision.status.current_step_index) == (Phase.PROGRESSING, 0)
    assert route_ready(sim) == (ConditionStatus.TRUE, "RouteFound")


def test_retry_with_the_route_still_broken_fails_again() -> None:
    sim = simulator_in(Phase.PROGRESSING)
    sim.route = ROUTE_NOT_FOUND
    sim.tick()

    decision = sim.tick(command=command(CommandAction.RETRY))

    assert decision.status.phase is Phase.FAILED
    assert weights_set(decision) == []


@pytest.mark.parametrize("phase", [Phase.SUCCEEDED, Phase.ROLLED_BACK])
def test_a_route_problem_after_the_rollout_only_sets_the_condition(phase: Phase) -> None:
    sim = simulator_in(phase)
    weight_before = sim.status.current_weight
    sim.route = RouteProblem(reason=Reason.BACKEND_NOT_FOUND, message="Service chat-v2 does not exist")

    decision = sim.tick(after=timedelta(minutes=1))

    assert (decision.status.phase, decision.status.current_weight) == (phase, weight_before)
    assert weights_set(decision) == []
    assert route_ready(sim) == (ConditionStatus.FALSE, "BackendNotFound")

    again = sim.tick(after=timedelta(minutes=1))
    assert event_reasons(again) == []  # reported once per problem, not every tick

    sim.route = live(weight_before)
    sim.tick(after=timedelta(minutes=1))
    assert sim.phase is phase
    assert route_ready(sim) == (ConditionStatus.TRUE, "RouteFound")


def test_a_long_route_problem_message_still_makes_a_valid_status() -> None:
    sim = simulator_in(Phase.PROGRESSING)
    sim.route = RouteProblem(reason=Reason.ROUTE_NOT_FOUND, message="no such route: " + "x" * 40_000)

    decision = sim.tick()

    assert decision.status.phase is Phase.FAILED
    assert round_trip(decision.status) == decision.status
