"""Another writer of the route's weights (a GitOps sync, a second controller, a person with kubectl):
the operator writes its weight back once; should the other writer change it again, the operator holds
instead of fighting. Holding: no weight writes and no step advances (a rollback still writes 0) until
`modelgate resume`, `promote` or `abort`, so that two writers never flap the route."""

from __future__ import annotations

from modelgate.api import PauseReason, Phase, RouteState
from modelgate.core.intents import BeginPause, Effect, EndPause, Hold, Intent, Say, SetRouteState, fields
from modelgate.core.model import LiveRoute
from modelgate.core.reasons import Reason
from modelgate.core.tick import TickView


def overwritten_by(tick: TickView, route: LiveRoute) -> str | None:
    """The other writer, when the route carries a weight that neither the operator left there (at its
    previous tick) nor wants now, and the route names a writer other than the operator."""
    left = tick.status.live_weight
    if route.other_writer is None or left is None:
        return None
    if route.candidate_weight in (left, tick.status.current_weight):
        return None
    return route.other_writer


def overwrite_noticed(tick: TickView) -> bool:
    """The route was overwritten in this rollout (said once; kept until a command or a new rollout)."""
    state = tick.status.route_state
    return state is not None and state.overwrite_noticed


def route_conflict_held(tick: TickView) -> bool:
    return tick.paused_by(PauseReason.ROUTE_CONFLICT)


def conflict_hold(tick: TickView) -> Intent:
    """The other writer's weight stays; only a rollback writes."""
    return Hold(pause=PauseReason.ROUTE_CONFLICT) if route_conflict_held(tick) else None


def overwrite_noted(tick: TickView, route: LiveRoute, writer: str) -> tuple[Effect, ...]:
    """What another writer's change says: the first is written back once, a second holds the rollout."""
    if route_conflict_held(tick):
        return ()  # already holding, and said so
    what = (
        f"field manager {writer!r} changed the route's candidate weight from {tick.status.live_weight}"
        f" to {route.candidate_weight}"
    )
    if not overwrite_noticed(tick):
        message = (
            f"{what}; writing {tick.status.current_weight} back once (a second change holds the rollout)"
        )
        return Say(Reason.ROUTE_OVERWRITTEN, message), SetRouteState(RouteState.OVERWRITTEN, message)
    message = (
        f"{what} again after the operator wrote its weight back; holding, with no more writes, until"
        " `modelgate resume`: stop the other writer first"
    )
    effects: list[Effect] = [
        Say(Reason.ROUTE_CONFLICT, message),
        SetRouteState(RouteState.CONFLICT, message),
        BeginPause(PauseReason.ROUTE_CONFLICT, message),
    ]
    phase = tick.status.phase
    if phase is Phase.PROGRESSING:
        phase = Phase.PAUSED
        effects.append(fields(phase=phase))
    if phase in (Phase.PENDING, Phase.PAUSED):
        effects.append(fields(message=f"paused: {message}"))
    return tuple(effects)


def releasing(tick: TickView, by: str) -> tuple[Effect, ...]:
    """A command ends a hold and forgets the overwrite: the weight is written again this tick."""
    written_again = (SetRouteState(RouteState.FOUND, f"writing weights again after {by}"),)
    return (*(written_again if overwrite_noticed(tick) else ()), EndPause((PauseReason.ROUTE_CONFLICT,)))
