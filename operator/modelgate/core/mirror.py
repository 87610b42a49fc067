"""The mirror (shadow) step: a copy of a share of the requests goes to the candidate, whose weight stays
what it was, and the analysis judges the candidate on the copies. What the route should mirror follows
from the spec and the status alone, so a restarted operator mirrors (or stops) as before."""

from __future__ import annotations

from typing import TYPE_CHECKING

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase
from modelgate.core.model import LiveRoute
from modelgate.core.reasons import Reason

if TYPE_CHECKING:
    from modelgate.core.engine import _Tick


def mirror_wanted(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> int:
    """The percentage of requests to copy to the candidate: the current step's while an active rollout
    is at a mirror step, else 0 (any other step, Pending, and every end: a rollback mirrors nothing)."""
    if status.phase not in (Phase.PROGRESSING, Phase.PAUSED) or status.current_step_index >= len(spec.steps):
        return 0
    mirror = spec.steps[status.current_step_index].mirror
    return 0 if mirror is None else mirror.percent


def candidate_served(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> bool:
    """The candidate gets requests, its own share or copies, so its metrics have something to judge."""
    return status.current_weight > 0 or mirror_wanted(spec, status) > 0


def settle_mirror(tick: _Tick) -> None:
    """At the end of a tick that may write the route: the mirror follows the step the tick ended at
    (MirrorSet or MirrorRemoved when that changes it), and a route whose mirror differs is written,
    with the tick's weight, in the same patch: the mirror never outlives the step that asked for it."""
    route = tick.observed.route
    if not tick.may_write or not isinstance(route, LiveRoute):
        return  # held for another writer, or a route that cannot be written
    wanted = mirror_wanted(tick.spec, tick.status)
    if wanted != tick.status.current_mirror_percent:
        tick.update(current_mirror_percent=wanted)
        if wanted:
            index = tick.status.current_step_index
            tick.event(Reason.MIRROR_SET, f"step {index}: copying {wanted}% of requests to the candidate")
        else:
            tick.event(Reason.MIRROR_REMOVED, "no more requests are copied to the candidate")
    if tick.weight is None and route.mirror_percent != wanted:
        tick.weight = tick.status.current_weight
