"""One owner per route rule (routers/claims.py records it on the route). A rollout writes a rule only
when it may claim it: nobody else claims it, or the rollout that did has ended and the route serves
this rollout's incumbent. Otherwise it holds, writing nothing, not even a rollback's 0, until that
changes by itself; an ended rollout whose rule a newer one took over writes it no more."""

from __future__ import annotations

from dataclasses import dataclass

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, PauseReason, RolloutRef, RouteState
from modelgate.core.intents import BeginPause, Effect, EndPause, Say, SetRouteState, fields
from modelgate.core.model import LiveRoute, Observations
from modelgate.core.reasons import Reason
from modelgate.core.tick import TickView


@dataclass(frozen=True)
class ClaimHold:
    """Why this rollout may not write the rule, as the route state, Event and message to show."""

    state: RouteState
    event: Reason
    message: str
    owner: RolloutRef | None


def claim_hold(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, route: LiveRoute
) -> ClaimHold | None:
    """None when the rollout may write the rule (and so claim it)."""
    claim = observed.route_claim
    if claim is None:
        # Unclaimed (an operator before claims, a new route): the rollout writes what it steers, or
        # takes a route that serves its incumbent at least in part.
        ours = route.candidate_weight == status.current_weight or observed.rollout_ref in route.owners
        return None if ours or route.incumbent_weight > 0 else _not_served(spec, route, None)
    owner = claim.owner
    if status.ended:
        message = f"{owner} took the route rule over; this rollout has ended and writes it no more"
        return ClaimHold(RouteState.HANDED_OVER, Reason.ROUTE_HANDED_OVER, message, owner)
    if not claim.owner_ended:
        message = (
            f"{owner} owns the route rule this rollout names; nothing is written until it ends (Succeeded,"
            " RolledBack or Failed) or is deleted"
        )
        return ClaimHold(RouteState.CLAIMED, Reason.ROUTE_CONFLICT, message, owner)
    if route.candidate_weight == 0 and route.incumbent_weight > 0:
        return None  # the ended owner left the route on this rollout's incumbent: taken over
    return _not_served(spec, route, owner)


def _not_served(spec: ModelRolloutSpec, route: LiveRoute, owner: RolloutRef | None) -> ClaimHold:
    ended = "" if owner is None else f" ({owner}, which claimed it, has ended)"
    message = (
        f"the route sends {route.candidate_weight}% to {spec.candidate.name} (spec.candidate) and"
        f" {route.incumbent_weight}% to {spec.incumbent.name} (spec.incumbent){ended}; this rollout"
        " takes the rule only while the route serves spec.incumbent: nothing is written until it does,"
        " or until spec.incumbent names the backend the route serves"
    )
    return ClaimHold(RouteState.INCUMBENT_NOT_SERVED, Reason.INCUMBENT_NOT_SERVED, message, owner)


def claim_noted(tick: TickView, held: ClaimHold) -> tuple[Effect, ...]:
    """What a claim hold records (nothing is written this tick): said once (an Event), kept in
    status, and a pause while the rollout is active."""
    said = tick.before.route_state is not held.state or tick.before.route_owner != held.owner
    noted: list[Effect] = [Say(held.event, held.message)] if said else []
    noted += [SetRouteState(held.state, held.message), fields(route_owner=held.owner)]
    if not tick.status.ended:
        noted += [
            BeginPause(PauseReason.ROUTE_CLAIMED, held.message),
            fields(message=f"held: {held.message}"),
        ]
    return tuple(noted)


CLAIM_RELEASED: tuple[Effect, ...] = (EndPause((PauseReason.ROUTE_CLAIMED,)), fields(route_owner=None))
"""The rule may be written: a claim hold ends."""
