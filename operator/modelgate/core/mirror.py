"""The mirror (shadow) step: a copy of a share of the requests goes to the candidate, whose weight stays
what it was, and the analysis judges the candidate on the copies. What the route should mirror follows
from the spec and the status alone, so a restarted operator mirrors (or stops) as before."""

from __future__ import annotations

from modelgate.core.model import LiveRoute
from modelgate.core.reasons import Reason
from modelgate.core.stage import mirror_wanted
from modelgate.core.tick import Tick


def settle_mirror(tick: Tick) -> None:
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
