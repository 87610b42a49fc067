"""Another writer of the route's weights (a GitOps sync, a second controller, a person with kubectl):
the operator writes its weight back once; should the other writer change it again, the operator holds
instead of fighting. Holding: no weight writes and no step advances (a rollback still writes 0) until
`modelgate resume`, `promote` or `abort`, so that two writers never flap the route."""

from __future__ import annotations

from modelgate.api import PauseReason, Phase, RouteState
from modelgate.core.intents import Hold, Intent
from modelgate.core.model import LiveRoute
from modelgate.core.reasons import Reason
from modelgate.core.tick import Tick


def overwritten_by(tick: Tick, route: LiveRoute) -> str | None:
    """The other writer, when the route carries a weight that neither the operator left there (at its
    previous tick) nor wants now, and the route names a writer other than the operator."""
    left = tick.status.live_weight
    if route.other_writer is None or left is None:
        return None
    if route.candidate_weight in (left, tick.status.current_weight):
        return None
    return route.other_writer


def overwrite_noticed(tick: Tick) -> bool:
    """The route was overwritten in this rollout (said once; kept until a command or a new rollout)."""
    state = tick.status.route_state
    return state is not None and state.overwrite_noticed


def route_conflict_held(tick: Tick) -> bool:
    return tick.paused_by(PauseReason.ROUTE_CONFLICT)


def conflict_hold(tick: Tick) -> Intent:
    """The other writer's weight stays; only a rollback writes."""
    return Hold(pause=PauseReason.ROUTE_CONFLICT) if route_conflict_held(tick) else None


def note_overwrite(tick: Tick, route: LiveRoute, writer: str) -> None:
    if route_conflict_held(tick):
        return  # already holding, and said so
    what = (
        f"field manager {writer!r} changed the route's candidate weight from {tick.status.live_weight}"
        f" to {route.candidate_weight}"
    )
    if not overwrite_noticed(tick):
        message = (
            f"{what}; writing {tick.status.current_weight} back once (a second change holds the rollout)"
        )
        tick.event(Reason.ROUTE_OVERWRITTEN, message)
        tick.route_state(RouteState.OVERWRITTEN, message)
        return
    message = (
        f"{what} again after the operator wrote its weight back; holding, with no more writes, until"
        " `modelgate resume`: stop the other writer first"
    )
    tick.event(Reason.ROUTE_CONFLICT, message)
    tick.route_state(RouteState.CONFLICT, message)
    tick.pause(PauseReason.ROUTE_CONFLICT, message)
    if tick.status.phase is Phase.PROGRESSING:
        tick.update(phase=Phase.PAUSED)
    if tick.status.phase in (Phase.PENDING, Phase.PAUSED):
        tick.update(message=f"paused: {message}")


def release_route(tick: Tick, by: str) -> None:
    """A command ends a hold and forgets the overwrite: the weight is written again this tick."""
    if overwrite_noticed(tick):
        tick.route_state(RouteState.FOUND, f"writing weights again after {by}")
    tick.unpause(PauseReason.ROUTE_CONFLICT)
