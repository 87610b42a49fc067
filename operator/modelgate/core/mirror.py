"""The mirror (shadow) step: a copy of a share of the requests goes to the candidate, whose weight stays
what it was, and the analysis judges the candidate on the copies. What the route should mirror follows
from the spec and the status alone, so a restarted operator mirrors (or stops) as before."""

from __future__ import annotations

from modelgate.core.intents import Effect, Say, fields
from modelgate.core.model import LiveRoute
from modelgate.core.reasons import Reason
from modelgate.core.stage import mirror_wanted
from modelgate.core.tick import TickView


def mirror_noted(tick: TickView) -> tuple[tuple[Effect, ...], bool]:
    """At the end of a tick that may write the route: the mirror follows the step the tick ended at
    (MirrorSet or MirrorRemoved when that changes it), and whether a route whose mirror differs is to
    be written, with the tick's weight, in the same patch: the mirror never outlives the step that
    asked for it."""
    route = tick.observed.route
    if not tick.may_write or not isinstance(route, LiveRoute):
        return (), False  # held for another writer, or a route that cannot be written
    wanted = mirror_wanted(tick.spec, tick.status)
    noted: tuple[Effect, ...] = ()
    if wanted != tick.status.current_mirror_percent:
        index = tick.status.current_step_index
        said = (
            Say(Reason.MIRROR_SET, f"step {index}: copying {wanted}% of requests to the candidate")
            if wanted
            else Say(Reason.MIRROR_REMOVED, "no more requests are copied to the candidate")
        )
        noted = (fields(current_mirror_percent=wanted), said)
    return noted, tick.weight is None and route.mirror_percent != wanted
