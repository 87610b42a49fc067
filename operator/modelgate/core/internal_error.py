"""A tick that raised what the operator does not expect (a bug): the fail-safe's decision. Like a spec
the operator cannot use (core/unusable.py), the rollout ends Failed and its candidate's traffic goes
back to the incumbent; nothing else of the tick is trusted, so nothing else is decided."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from modelgate.api import ModelRolloutStatus, PauseReason, Phase
from modelgate.api import internal_error_status as api
from modelgate.core import limits
from modelgate.core.actions import returned_actions
from modelgate.core.conditions import set_condition
from modelgate.core.model import Decision, Event, Outcome, WriteRoute
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.tick_history import note_history
from modelgate.core.writes import warned


@dataclass(frozen=True)
class TickError:
    """The exception a tick raised: its type's name and its message."""

    kind: str
    detail: str

    def status(self, now: datetime) -> api.InternalError:
        detail = limits.clip(self.detail, limits.ANALYSIS_MESSAGE)
        return api.InternalError(time=now, type=limits.clip(self.kind, limits.ERROR_TYPE), message=detail)

    @property
    def message(self) -> str:
        returned = "the candidate's traffic returned"
        return f"internal error in the operator (a bug), {returned}: {self.kind}: {self.detail}"


def decide_internal_error(
    error: TickError, status: ModelRolloutStatus, generation: int, now: datetime
) -> Decision:
    """A Succeeded rollout keeps its phase and weight (its candidate is what serves now). Any other
    ends Failed with the candidate's weight and mirror at 0, asked until the route carries them (a
    rolled-back one too: a gradual rollback is not left half-way), the Completed condition saying
    InternalError. Said once: the same error again only asks for what is not live yet."""
    message = limits.clip(error.message, limits.STATUS_MESSAGE)
    if status.phase is Phase.SUCCEEDED:
        kept = note_history(status, status.model_copy(update={"message": message}), now)
        return Decision(kept, returned_actions(kept, None, ()))
    held = status.pause is not None and status.pause.reason is PauseReason.ROUTE_CONFLICT
    conditions = set_condition(
        status.conditions,
        ConditionType.COMPLETED,
        False,
        Reason.INTERNAL_ERROR,
        limits.clip(error.message, limits.CONDITION_MESSAGE),
        now,
        generation,
    )
    update = {
        "phase": Phase.FAILED,
        "message": message,
        "observed_generation": generation,
        "current_weight": 0,
        "current_mirror_percent": 0,
        "rolling_back": None,
        "pause": status.pause if held else None,
        "conditions": conditions,
        "internal_error": _kept(status.internal_error, error.status(now)),
    }
    failed = note_history(status, status.model_copy(update=update), now)
    returned = status.live_weight == 0 and not status.live_mirror_percent
    route = None if returned else WriteRoute(0, 0, warned(status))
    if status.phase is Phase.FAILED and status.message == message:
        return Decision(failed, returned_actions(failed, route, ()))
    outcome = None if status.phase is Phase.FAILED else Outcome(Phase.FAILED, Reason.INTERNAL_ERROR)
    events = (Event(Reason.INTERNAL_ERROR, error.message),)
    return Decision(failed, returned_actions(failed, route, events), outcome)


def _kept(said: api.InternalError | None, now: api.InternalError) -> api.InternalError:
    """The error said before, with its time, if it is the same one."""
    if said is not None and (said.type, said.message) == (now.type, now.message):
        return said
    return now
