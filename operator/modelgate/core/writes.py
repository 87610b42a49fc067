"""What a weight write returned, folded into the tick's decision: the weight the route now carries
goes to status, and a write that did not take (on any of the routes moved together, named) is a
Warning (once, until it takes) and a retry (core/actions.py's after_write folds it into the actions)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from modelgate.api import ModelRolloutStatus, Phase, RouteState
from modelgate.core import conditions as cond
from modelgate.core import limits
from modelgate.core.model import Decision, Event, LiveRoute, WriteResult, WriteRoute
from modelgate.core.reasons import Reason

# A weight write that did not take is tried again this soon, not at the next resync.
WRITE_RETRY = timedelta(seconds=1)


def warned(before: ModelRolloutStatus) -> bool:
    """Whether the status says a write did not take already (its Warning is out)."""
    return before.route_state is RouteState.WEIGHT_NOT_APPLIED


@dataclass(frozen=True)
class Settled:
    """What a route write's result changes: the status, a Warning to post (None: none), the wake-up."""

    status: ModelRolloutStatus
    warning: Event | None
    wake_at: datetime | None


def settle(
    status: ModelRolloutStatus,
    route: WriteRoute,
    written: WriteResult,
    now: datetime,
    wake_at: datetime | None,
) -> Settled:
    wanted = route.weight
    copies = _mirror(route.mirror_percent)
    if isinstance(written, LiveRoute):
        status = status.model_copy(
            update={"live_weight": written.candidate_weight, "live_mirror_percent": written.mirror_percent}
        )
        if written.differing is not None:
            problem = f"after writing candidate weight {wanted}{copies}, {written.differing}"
        elif (written.candidate_weight, written.mirror_percent) == (wanted, route.mirror_percent):
            return Settled(status, None, wake_at)
        else:
            carried = f"{written.candidate_weight}{_mirror(written.mirror_percent)}"
            problem = f"the route carries candidate weight {carried} after writing {wanted}{copies}"
    else:  # a RouteProblem or a WriteFailed
        problem = f"writing candidate weight {wanted}{copies} failed: {written.message}"
    message = limits.clip(f"{problem}; retrying", limits.CONDITION_MESSAGE)
    generation = status.observed_generation or 0
    status = cond.with_route_state(status, RouteState.WEIGHT_NOT_APPLIED, message, now, generation)
    warning = None if route.warned else Event(Reason.WEIGHT_NOT_APPLIED, message)
    if wake_at is not None and status.phase is not Phase.FAILED:  # Failed waits for the route to be read
        wake_at = min(wake_at, now + WRITE_RETRY)
    return Settled(status, warning, wake_at)


def as_if_taken(decision: Decision) -> ModelRolloutStatus:
    """The decision's status once the route carries the weight and mirror its WriteRoute writes
    (what `settle` makes of a write that took); the status itself when it writes none."""
    route = next((action for action in decision.actions if isinstance(action, WriteRoute)), None)
    if route is None:
        return decision.status
    taken = {"live_weight": route.weight, "live_mirror_percent": route.mirror_percent}
    return decision.status.model_copy(update=taken)


def _mirror(percent: int) -> str:
    return f" and a {percent}% mirror" if percent else ""
