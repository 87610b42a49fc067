"""A spec the operator cannot use (what the CRD could not catch): the rollout ends Failed, naming the
field, and its candidate's traffic goes back to the incumbent."""

from __future__ import annotations

from datetime import datetime

from modelgate.api import ModelRolloutStatus, PauseReason, Phase
from modelgate.core import limits
from modelgate.core.actions import returned_actions
from modelgate.core.model import Decision, Event, Outcome, SpecProblem, WriteRoute
from modelgate.core.reasons import Reason
from modelgate.core.tick_history import note_history
from modelgate.core.writes import warned


def decide_unusable(
    problem: SpecProblem, status: ModelRolloutStatus, generation: int, now: datetime
) -> Decision:
    """A spec the operator cannot use, naming the field. An active rollout ends Failed and its
    candidate's traffic goes back to the incumbent (weight 0, asked until the route carries it);
    a finished one (Succeeded, RolledBack) keeps its phase and weight. Said once: the same problem
    again only asks for the weight that is not live yet."""
    message = limits.clip(problem.message, limits.STATUS_MESSAGE)
    finished = status.phase in (Phase.SUCCEEDED, Phase.ROLLED_BACK)
    update: dict[str, object] = {"message": message, "observed_generation": generation}
    if not finished:
        held = status.pause is not None and status.pause.reason is PauseReason.ROUTE_CONFLICT
        update |= {"phase": Phase.FAILED, "current_weight": 0, "pause": status.pause if held else None}
    unusable = note_history(status, status.model_copy(update=update), now)
    route = None if finished or status.live_weight == 0 else WriteRoute(0, 0, warned(status))
    if status.message == message and (finished or status.phase is Phase.FAILED):
        return Decision(unusable, returned_actions(unusable, route, ()))
    outcome = None if finished or status.phase is Phase.FAILED else Outcome(Phase.FAILED, Reason.INVALID_SPEC)
    events = (Event(Reason.INVALID_SPEC, problem.message),)
    return Decision(unusable, returned_actions(unusable, route, events), outcome)
