"""Conditions are Kubernetes-style: lastTransitionTime moves only when a condition's status does."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import ConditionStatus, Phase
from modelgate.core import ConditionType
from modelgate.core.reasons import condition, set_condition
from tests.unit.engine_support import (
    INTERVAL,
    ROUTE_NOT_FOUND,
    T0,
    Outcome,
    Simulator,
    live,
    make_spec,
    weight,
)

LATER = T0 + timedelta(minutes=5)


def test_same_status_keeps_the_transition_time_but_updates_the_rest() -> None:
    first = set_condition((), ConditionType.ROUTE_READY, True, "RouteFound", "ok", T0, generation=1)

    again = set_condition(
        first, ConditionType.ROUTE_READY, True, "StillFound", "still ok", LATER, generation=2
    )

    (updated,) = again
    assert updated.last_transition_time == T0
    assert (updated.reason, updated.message, updated.observed_generation) == ("StillFound", "still ok", 2)


def test_a_new_status_moves_the_transition_time() -> None:
    first = set_condition((), ConditionType.ROUTE_READY, True, "RouteFound", "ok", T0, generation=1)

    flipped = set_condition(
        first, ConditionType.ROUTE_READY, False, "RouteNotFound", "gone", LATER, generation=1
    )

    (updated,) = flipped
    assert (updated.status, updated.last_transition_time) == (ConditionStatus.FALSE, LATER)


def test_other_conditions_are_kept() -> None:
    both = set_condition(
        set_condition((), ConditionType.ROUTE_READY, True, "RouteFound", "ok", T0, 1),
        ConditionType.COMPLETED,
        False,
        "RolledBack",
        "x",
        T0,
        1,
    )
    updated = set_condition(both, ConditionType.COMPLETED, True, "Succeeded", "done", LATER, 1)
    assert [c.type for c in updated] == [ConditionType.ROUTE_READY, ConditionType.COMPLETED]
    assert condition(updated, ConditionType.ROUTE_READY) == both[0]
    assert condition(updated, "Missing") is None


def test_engine_keeps_transition_times_across_ticks() -> None:
    sim = Simulator(make_spec(weight(20), weight(100), max_consecutive_errors=10))
    sim.start()
    for _ in range(3):
        sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    ready = condition(sim.status.conditions, ConditionType.ROUTE_READY)
    healthy = condition(sim.status.conditions, ConditionType.ANALYSIS_HEALTHY)
    assert ready is not None and ready.last_transition_time == T0
    assert healthy is not None and healthy.last_transition_time == T0 + INTERVAL
    assert healthy.reason == "QueryError"

    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    healthy = condition(sim.status.conditions, ConditionType.ANALYSIS_HEALTHY)
    assert healthy is not None and healthy.status is ConditionStatus.TRUE
    assert healthy.last_transition_time == sim.now


def test_engine_moves_route_ready_when_the_route_breaks_and_returns() -> None:
    sim = Simulator(make_spec(weight(100), with_analysis=False))
    sim.start()
    sim.tick()
    assert sim.phase is Phase.SUCCEEDED

    sim.route = ROUTE_NOT_FOUND
    sim.tick(after=timedelta(minutes=1))
    broken_at = sim.now
    sim.tick(after=timedelta(minutes=1))
    ready = condition(sim.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and (ready.status, ready.last_transition_time) == (
        ConditionStatus.FALSE,
        broken_at,
    )

    sim.route = live(100)
    sim.tick(after=timedelta(minutes=1))
    ready = condition(sim.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and (ready.status, ready.last_transition_time) == (ConditionStatus.TRUE, sim.now)
