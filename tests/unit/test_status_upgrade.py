"""A status an older operator wrote, before status.routeState and candidateAvailable, whose route state
and candidate availability were known only from conditions: the upgrade reads them once, so that it
neither answers another writer twice nor warns twice of a write that did not take."""

from __future__ import annotations

from modelgate.api import ModelRolloutStatus, Phase, RouteState
from modelgate.core import LiveRoute, Reason
from modelgate.core.actions import warned
from modelgate.core.reasons import with_route_state
from modelgate.core.tick import with_state_from_conditions
from tests.unit.engine_support import (
    T0,
    Simulator,
    event_reasons,
    make_spec,
    timed_pause,
    weight,
    weights_set,
)

GITOPS = "argocd-controller"


def _as_an_older_operator_wrote_it(status: ModelRolloutStatus) -> ModelRolloutStatus:
    return status.model_copy(update={"route_state": None, "candidate_available": None})


def _overwritten_once() -> Simulator:
    sim = Simulator(make_spec(weight(20), timed_pause("1m"), weight(100), with_analysis=False))
    sim.start()
    sim.tick()
    sim.route = LiveRoute(63, 37, GITOPS)
    assert weights_set(sim.tick()) == [20]  # written back once
    return sim


def test_an_overwrite_an_older_operator_answered_is_not_answered_again() -> None:
    sim = _overwritten_once()
    sim.status = _as_an_older_operator_wrote_it(sim.status)
    sim.conditions_unread = False  # the upgrade reads them, once
    sim.route = LiveRoute(59, 41, GITOPS)
    decision = sim.tick()
    assert weights_set(decision) == []
    assert decision.status.phase is Phase.PAUSED
    assert decision.status.route_state is RouteState.CONFLICT


def test_a_write_an_older_operator_warned_of_is_not_warned_again() -> None:
    sim = _overwritten_once()
    reported = with_route_state(sim.status, RouteState.WEIGHT_NOT_APPLIED, "did not take", T0, 1)
    older = _as_an_older_operator_wrote_it(reported)
    assert not warned(older)
    assert warned(with_state_from_conditions(older, T0))


def test_the_candidates_availability_is_read_from_its_condition() -> None:
    sim = _overwritten_once()
    assert sim.status.candidate_available is True
    upgraded = with_state_from_conditions(_as_an_older_operator_wrote_it(sim.status), T0)
    assert upgraded.candidate_available is True
    assert upgraded.route_state is RouteState.OVERWRITTEN
    assert Reason.ROUTE_OVERWRITTEN in event_reasons(sim.ticks[-1])
