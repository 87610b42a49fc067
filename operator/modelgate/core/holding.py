"""Which status changes may wait in the operator's memory instead of costing a write each tick.

An active rollout evaluates its metrics every interval, and each evaluation changes its status
(lastAnalysisAt, the values, their history), although nothing else does; likewise a weight write's
verification only confirms, in liveWeight, the weight the status already names. Writing each of
those is most of the status writes a rollout makes, and at 1,000 rollouts the API server's capacity
is what the operator waits on. Such changes are held, at most MAX_STATUS_HOLD, and written with the
next change that must be written at once: a phase, a step, a weight, a verdict, a failure count, a
Prometheus error count, a condition, a command's result, a message, a deadline's start, or anything
else in status.

What an operator killed while holding loses is only what it would find again: an older
lastAnalysisAt makes it evaluate again at once, before it acts on the step (as if it had been
killed before that evaluation); the sequential test's totals of the older evaluation are the
baseline its next evaluation counts from, so the events of the lost evaluation count once, in that
one; the liveWeight is read back from the route at every tick. Every verdict and count that a
decision rests on (failures, consecutive Prometheus errors, a verdict that changed) is written when
it changes, so a restart never finds a lower failure count or misses a breach.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from modelgate.api import ModelRolloutStatus
from modelgate.core.schedule import ACTIVE_PHASES

# How long a change may wait in memory by default (`modelgate run --status-hold`): at a 10 s interval,
# two of three evaluations of a long pause are not written.
MAX_STATUS_HOLD = timedelta(seconds=30)

# What of one metric's evaluation may wait: the numbers behind a verdict that did not change.
_EVALUATION_DETAIL = {"time", "value", "incumbent_value", "query", "message", "history", "sequential"}


def may_hold(
    stored: ModelRolloutStatus,
    wanted: ModelRolloutStatus,
    held_since: datetime | None,
    now: datetime,
    longest: timedelta = MAX_STATUS_HOLD,
) -> bool:
    """Whether `wanted` may stay in memory rather than replace `stored` (the status as written) now.
    `held_since`: when the oldest change not yet written was made (None: nothing is held); `longest`:
    how long a change may wait (0: none may). A rollout that has ended is written at once: it ticks
    again only minutes later."""
    if wanted.phase not in ACTIVE_PHASES:
        return False
    if now - (now if held_since is None else held_since) >= longest:
        return False
    return _lasting(stored, wanted) == _lasting(wanted, wanted)


def _lasting(status: ModelRolloutStatus, wanted: ModelRolloutStatus) -> dict[str, Any]:
    """What of `status` must be written as soon as it changes. The live weight and mirror may wait
    when `wanted` says they are the ones it asks for: a verification, not news."""
    confirmed = (wanted.live_weight, wanted.live_mirror_percent) == (
        wanted.current_weight,
        wanted.current_mirror_percent,
    )
    exclude: dict[str, Any] = {"last_analysis_at": True, "analysis": {"__all__": _EVALUATION_DETAIL}}
    if confirmed:
        exclude |= {"live_weight": True, "live_mirror_percent": True}
    return status.model_dump(exclude=exclude)
