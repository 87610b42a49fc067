"""Progress deadlines: a rollout Pending (candidate never Available) or Inconclusive (too little
data) past its deadline takes the configured action, instead of holding two model fleets forever,
as Flagger's and Argo Rollouts' progress deadlines do."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from modelgate.api import (
    Deadline,
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    RollbackReason,
    Verdict,
)
from modelgate.api.progress_deadlines import DEFAULT_INCONCLUSIVE_DEADLINE, DEFAULT_PENDING_DEADLINE
from modelgate.core.intents import Fail, Hold, Intent, RollBack
from modelgate.core.model import Event
from modelgate.core.reasons import Reason
from modelgate.core.stage import watching
from modelgate.core.tick import TickView


def pending_deadline(tick: TickView) -> Intent:
    """The pending deadline's action once it has passed (a pause that begins holds)."""
    since, what = tick.status.pending_since, "the candidate has not become Available within"
    return _check(tick, PauseReason.PENDING_DEADLINE, pending_limit(tick.spec), since, what)


def candidate_deadline(tick: TickView) -> Intent:
    """While the candidate is not Available: the pending deadline's action once it has passed."""
    return None if tick.observed.candidate_available else pending_deadline(tick)


def pending_limit(spec: ModelRolloutSpec) -> Deadline:
    """The spec's pending deadline; unset, DEFAULT_PENDING_DEADLINE."""
    deadlines = spec.progress_deadlines
    if deadlines is not None and deadlines.pending is not None:
        return deadlines.pending
    return DEFAULT_PENDING_DEADLINE


def inconclusive_deadline(tick: TickView) -> Intent:
    """The inconclusive deadline's action once it has passed (a pause that begins holds)."""
    deadline = inconclusive_limit(tick.spec, tick.status)
    since = tick.status.inconclusive_since
    what = "the analysis has been Inconclusive for"
    without = _without_events(tick.status)
    detail = _inconclusive(tick)
    if without:
        detail += f"; no events on either side in {', '.join(without)}: a ratio margin is never shown"
    intent = _check(tick, PauseReason.INCONCLUSIVE_DEADLINE, deadline, since, what, detail)
    return replace(intent, without_events=without) if isinstance(intent, Hold) else intent


def inconclusive_limit(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> Deadline | None:
    """The spec's inconclusive deadline; unset, DEFAULT_INCONCLUSIVE_DEADLINE in a step (the watch
    window ends at its own time)."""
    deadlines = spec.progress_deadlines
    if deadlines is not None and deadlines.inconclusive is not None:
        return deadlines.inconclusive
    return None if watching(status) else DEFAULT_INCONCLUSIVE_DEADLINE


def _inconclusive(tick: TickView) -> str:
    """The Inconclusive metrics and why, for the deadline's message."""
    why = [f"{m.name}: {m.message}" for m in tick.status.analysis if m.verdict is Verdict.INCONCLUSIVE]
    return f" ({'; '.join(why)})" if why else ""


def _without_events(status: ModelRolloutStatus) -> tuple[str, ...]:
    """The Inconclusive metrics whose counts hold requests but no event on either side: a ratio margin
    is never shown from them (docs/statistics.md), which the pause says as data."""
    return tuple(
        m.name
        for m in status.analysis
        if m.verdict is Verdict.INCONCLUSIVE
        and m.sequential is not None
        and m.sequential.candidate_requests > 0
        and m.sequential.candidate_events == m.sequential.incumbent_events == 0
    )


def _check(
    tick: TickView,
    pause: PauseReason,
    deadline: Deadline | None,
    since: datetime | None,
    what: str,
    detail: str = "",
) -> Intent:
    if deadline is None or deadline.action == "wait" or since is None:
        return None
    return _act(tick, pause, deadline, since, f"{what} {deadline.after}{detail}")


def deadline_paused(tick: TickView) -> bool:
    return tick.paused_by(PauseReason.PENDING_DEADLINE, PauseReason.INCONCLUSIVE_DEADLINE)


def deadline_hold(tick: TickView) -> Intent:
    """Paused at its deadline: held, with the message saying why, until `modelgate resume`."""
    pause = tick.status.pause
    return Hold(pause=pause.reason) if pause is not None and pause.reason.deadline else None


def _act(tick: TickView, pause: PauseReason, deadline: Deadline, since: datetime, what: str) -> Intent:
    if tick.now - since < deadline.after_timedelta or deadline_paused(tick):
        return None
    unset = deadline in (DEFAULT_PENDING_DEADLINE, DEFAULT_INCONCLUSIVE_DEADLINE)
    message = f"{what}; {deadline.action} per spec.progressDeadlines{' (its default)' if unset else ''}"
    if deadline.action == "rollback":
        return RollBack(RollbackReason(time=tick.now, message=message), Reason.PROGRESS_DEADLINE_EXCEEDED)
    exceeded = Event(Reason.PROGRESS_DEADLINE_EXCEEDED, message)
    if deadline.action == "fail":
        return Fail(Reason.PROGRESS_DEADLINE_EXCEEDED, message, exceeded)
    # pause: the weights stay; `modelgate resume` (or `promote`) restarts the clock.
    paused = f"paused: {message}; run `modelgate resume` to continue"
    return Hold(paused, pause, Reason.PROGRESS_DEADLINE_EXCEEDED, message, exceeded)
