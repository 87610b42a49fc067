"""One owner per route rule (core/holds.py): a rollout whose rule another live rollout claims
writes nothing, not even a rollback's 0, and says who owns it; an ended owner's rule is taken over only
while the route serves the newer rollout's incumbent; an ended rollout whose rule was taken over writes
it no more."""

from __future__ import annotations

from modelgate.api import PauseReason, Phase, RolloutRef, RouteState
from modelgate.core import CommandAction, LiveRoute, Reason, RouteClaim, next_wakeup
from modelgate.core.actions import weight_on_delete
from modelgate.core.stepping import RESYNC
from tests.unit.engine_support import (
    INTERVAL,
    Simulator,
    command,
    event_reasons,
    make_spec,
    simulator_in,
    weight,
    weights_set,
)

OLDER = RolloutRef(namespace="serving", name="chat-older", uid="uid-older")


def claimed(sim: Simulator, *, owner_ended: bool, candidate_weight: int) -> Simulator:
    """The route as another rollout (OLDER) left it, with its claim."""
    sim.route = LiveRoute(100 - candidate_weight, candidate_weight)
    sim.owners = frozenset({OLDER})
    sim.route_claim = RouteClaim(OLDER, owner_ended)
    return sim


def pending_sim() -> Simulator:
    return Simulator(make_spec(weight(20), weight(100)))


def test_a_rule_a_live_rollout_owns_holds_the_newer_one_without_a_write() -> None:
    sim = claimed(pending_sim(), owner_ended=False, candidate_weight=100)

    first = sim.tick()
    second = sim.tick(after=INTERVAL)

    assert weights_set(first) == weights_set(second) == []
    assert sim.status.route_state is RouteState.CLAIMED
    assert sim.status.route_owner == OLDER
    assert sim.status.pause is not None and sim.status.pause.reason is PauseReason.ROUTE_CLAIMED
    assert str(OLDER) in sim.status.pause.message
    assert event_reasons(first).count(Reason.ROUTE_CONFLICT) == 1
    assert Reason.ROUTE_CONFLICT not in event_reasons(second)  # said once
    assert next_wakeup(sim.spec, sim.status, sim.now) == RESYNC  # nothing to retry


def test_an_abort_while_held_writes_nothing_either() -> None:
    sim = claimed(pending_sim(), owner_ended=False, candidate_weight=100)
    sim.tick()

    aborted = sim.tick(command=command(CommandAction.ABORT))

    assert weights_set(aborted) == []
    assert sim.route == LiveRoute(0, 100)


def test_the_hold_ends_when_the_owner_ends_and_the_route_serves_the_incumbent() -> None:
    sim = claimed(pending_sim(), owner_ended=False, candidate_weight=0)
    sim.tick()

    sim.route_claim = RouteClaim(OLDER, owner_ended=True)
    taken_over = sim.tick(after=INTERVAL)

    assert weights_set(taken_over) == [20]  # step 0 of the newer rollout
    assert (sim.status.route_state, sim.status.route_owner, sim.status.pause) == (
        RouteState.FOUND,
        None,
        None,
    )


def test_an_ended_owner_that_left_the_route_elsewhere_holds_the_newer_one_naming_both_sides() -> None:
    sim = claimed(pending_sim(), owner_ended=True, candidate_weight=100)

    decision = sim.tick()

    assert weights_set(decision) == []
    assert sim.status.route_state is RouteState.INCUMBENT_NOT_SERVED
    assert sim.status.route_owner == OLDER
    message = sim.status.message or ""
    assert sim.spec.incumbent.name in message and sim.spec.candidate.name in message
    assert Reason.INCUMBENT_NOT_SERVED in event_reasons(decision)


def test_an_unclaimed_route_that_serves_none_of_the_incumbent_is_not_taken() -> None:
    sim = pending_sim()
    sim.route = LiveRoute(0, 100)  # e.g. left by an operator from before claims

    decision = sim.tick()

    assert weights_set(decision) == []
    assert (sim.status.route_state, sim.status.route_owner) == (RouteState.INCUMBENT_NOT_SERVED, None)


def test_an_ended_rollout_whose_rule_was_taken_over_writes_it_no_more() -> None:
    sim = simulator_in(Phase.SUCCEEDED)
    claimed(sim, owner_ended=False, candidate_weight=0)  # a newer rollout took it, at its step 0

    decision = sim.tick(after=RESYNC)

    assert weights_set(decision) == []
    assert sim.status.phase is Phase.SUCCEEDED
    assert (sim.status.route_state, sim.status.route_owner) == (RouteState.HANDED_OVER, OLDER)
    assert sim.status.pause is None
    assert Reason.ROUTE_HANDED_OVER in event_reasons(decision)


def test_a_rollout_that_owns_its_rule_writes_as_before() -> None:
    sim = pending_sim()
    sim.start()

    assert sim.owners == frozenset({RolloutRef(namespace="", name="", uid=sim.uid)})
    assert sim.tick(command=command(CommandAction.ABORT)).written == 0


def test_a_deleted_rollout_returns_no_traffic_on_a_rule_another_rollout_owns() -> None:
    spec = make_spec(weight(20)).model_copy(deep=True)
    spec = spec.model_copy(
        update={"rollback": spec.rollback.model_copy(update={"on_delete": "ReturnTraffic"})}
    )
    sim = simulator_in(Phase.PROGRESSING, spec)
    me = RolloutRef(namespace="", name="", uid=sim.uid)
    route = LiveRoute(80, 20, owners=frozenset({OLDER}))

    assert weight_on_delete(spec, sim.status, route, me) is None
    assert weight_on_delete(spec, sim.status, LiveRoute(80, 20, owners=frozenset({me})), me) == 0
