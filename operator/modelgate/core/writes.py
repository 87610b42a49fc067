"""What a weight write returned, folded into the tick's decision: the weight the route now carries
goes to status, and a write that did not take (on any of the routes moved together, named) is a
Warning (once, until it takes) and a retry."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from modelgate.api import ModelRolloutStatus, Phase, RouteState
from modelgate.core import conditions as cond
from modelgate.core import limits
from modelgate.core.model import Decision, Event, LiveRoute, WriteResult
from modelgate.core.reasons import Reason

# A weight write that did not take is tried again this soon, not at the next resync.
WRITE_RETRY = timedelta(seconds=1)


def settle_write(
    before: ModelRolloutStatus, decision: Decision, written: WriteResult, now: datetime, generation: int
) -> Decision:
    return settle(decision, written, now, generation, warned=warned(before))


def warned(before: ModelRolloutStatus) -> bool:
    """Whether the status says a write did not take already (its Warning is out)."""
    return before.route_state is RouteState.WEIGHT_NOT_APPLIED


def settle(
    decision: Decision, written: WriteResult, now: datetime, generation: int, *, warned: bool
) -> Decision:
    wanted = decision.weight
    assert wanted is not None, "only a decision that wrote a weight has a write to settle"
    status = decision.status
    copies = _mirror(decision.mirror_percent)
    if isinstance(written, LiveRoute):
        status = status.model_copy(
            update={"live_weight": written.candidate_weight, "live_mirror_percent": written.mirror_percent}
        )
        if written.differing is not None:
            problem = f"after writing candidate weight {wanted}{copies}, {written.differing}"
        elif (written.candidate_weight, written.mirror_percent) == (wanted, decision.mirror_percent):
            return dataclasses.replace(decision, status=status)
        else:
            carried = f"{written.candidate_weight}{_mirror(written.mirror_percent)}"
            problem = f"the route carries candidate weight {carried} after writing {wanted}{copies}"
    else:  # a RouteProblem or a WriteFailed
        problem = f"writing candidate weight {wanted}{copies} failed: {written.message}"
    message = limits.clip(f"{problem}; retrying", limits.CONDITION_MESSAGE)
    status = cond.with_route_state(status, RouteState.WEIGHT_NOT_APPLIED, message, now, generation)
    events = decision.events
    if not warned:
        events = (*events, Event(Reason.WEIGHT_NOT_APPLIED, message))
    wake_at = decision.wake_at
    if wake_at is not None and status.phase is not Phase.FAILED:  # Failed waits for the route to be read
        wake_at = min(wake_at, now + WRITE_RETRY)
    return dataclasses.replace(decision, status=status, events=events, wake_at=wake_at)


def as_if_taken(decision: Decision) -> ModelRolloutStatus:
    """The decision's status once the route carries the weight and mirror it writes (what `settle`
    makes of a write that took); the status itself when it writes none."""
    if decision.weight is None:
        return decision.status
    taken = {"live_weight": decision.weight, "live_mirror_percent": decision.mirror_percent}
    return decision.status.model_copy(update=taken)


def _mirror(percent: int) -> str:
    return f" and a {percent}% mirror" if percent else ""
