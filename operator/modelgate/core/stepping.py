"""The steps and their timing: whether the current step is done, the mirror step, when each thing
is due (computed from timestamps in status, never from how long the operator ran), and which
status changes may wait in the operator's memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from modelgate.api import (
    MetricAnalysis,
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RouteState,
    Verdict,
)
from modelgate.core import holds
from modelgate.core.actions import WRITE_RETRY as WRITE_RETRY  # re-exported: every wait is named here
from modelgate.core.endings import next_step_at
from modelgate.core.holds import inconclusive_limit, pending_limit
from modelgate.core.judging import next_check_at
from modelgate.core.model import Effect, LiveRoute, Say, fields
from modelgate.core.reasons import Reason, moment
from modelgate.core.tick import TickView, candidate_served, mirror_wanted

# -- step_completion -------------------------------------------------------------------------------
# Whether the current step is done: its weight (and mirror) live, the candidate Available, its pause over, and
# a passing analysis taken at least one interval into the step; and what a new step starts from. Each unmet
# need is said in the status message.


@dataclass(frozen=True)
class Unmet:
    """What keeps the current step from completing; `note`, when set, says so in the status message."""

    note: str | None = None


def unmet_need(tick: TickView) -> Unmet | None:
    """None when the current step is complete."""
    step = tick.step
    if holds.step_waits(tick):
        return Unmet()  # its weight is not raised yet; the message says why
    if not tick.weights_live:
        mirror = mirror_wanted(tick.spec, tick.status)
        copies = f" and a {mirror}% mirror" if mirror else ""
        return Unmet(f"waiting for weight {tick.status.current_weight}{copies} to be live")
    if not tick.observed.candidate_available:
        # As Flagger halts: no step is finished while the candidate is not Available; its
        # traffic stays as it is, and the metrics decide whether that is a rollback.
        return Unmet(f"holding: the candidate is not Available ({tick.observed.candidate_message})")
    if step.pause is not None or step.mirror is not None:
        ends_at = pause_ends_at(tick.spec, tick.status)
        if ends_at is None:
            return Unmet()  # indefinite: until `modelgate promote`
        if tick.now < ends_at:
            return Unmet(f"{'mirroring' if step.mirror else 'paused'} until {moment(ends_at)}")
    return analysis_unmet(tick)


def analysis_unmet(tick: TickView) -> Unmet | None:
    """None once every metric has a passing run taken at least one interval after the step started."""
    analysis = tick.spec.analysis
    if analysis is None or not candidate_served(tick.spec, tick.status):
        return None
    settled = step_settles_at(tick.spec, tick.status)
    assert settled is not None
    latest = {m.name: m for m in tick.status.analysis}
    for metric in (m for m in analysis.metrics if not m.dry_run):
        record = latest.get(metric.name)
        if record is None or record.time < settled or record.verdict is not Verdict.PASS:
            state = "no analysis yet" if record is None or record.time < settled else record.message
            return Unmet(f"waiting for {metric.name} to pass ({state})")
    return None


def failures_for_new_step(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> tuple[MetricAnalysis, ...]:
    """Metrics whose failureLimit counts per step start the step with no failures."""
    per_step = (
        {m.name for m in spec.analysis.metrics if m.failure_limit_scope == "step"}
        if (spec.analysis)
        else set()
    )
    return tuple(m.model_copy(update={"failures": 0}) if m.name in per_step else m for m in status.analysis)


# -- mirror ----------------------------------------------------------------------------------------
# The mirror (shadow) step: a copy of a share of the requests goes to the candidate, whose weight stays what
# it was, and the analysis judges the candidate on the copies. What the route should mirror follows from the
# spec and the status alone, so a restarted operator mirrors (or stops) as before.


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


# -- schedule --------------------------------------------------------------------------------------
# When things are due, computed from timestamps in status (never from how long the operator ran).


ACTIVE_PHASES = frozenset({Phase.PENDING, Phase.GATING, Phase.PROGRESSING, Phase.PAUSED})
# How often an active rollout with nothing scheduled is looked at again: a waiting one notices a
# candidate becoming Available, and each re-asserts its weights.
RESYNC = timedelta(seconds=10)
# A finished rollout (Succeeded, RolledBack, Failed) only re-asserts its weights; a change to its route
# wakes it (no sooner than RESYNC after its last tick), so this is a backstop, and 1,000 finished
# rollouts cost next to nothing.
FINISHED_RESYNC = timedelta(minutes=5)
MIN_WAKEUP = timedelta(milliseconds=200)
# How often a gate's checks are looked at: a finished Job wakes its rollout at once, but a Pod whose
# container cannot start changes no Job.
GATE_POLL = timedelta(seconds=2)


def analysis_due(spec: ModelRolloutSpec, status: ModelRolloutStatus, now: datetime) -> bool:
    next_run = next_analysis_at(spec, status)
    return next_run is not None and next_run <= now


def next_analysis_at(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> datetime | None:
    """Metrics are evaluated every interval while the candidate takes traffic (or copies of it, in a
    mirror step) in an active rollout; a step's first run is one interval after the step started, so
    that its window holds the step's traffic (a run at its start would see the previous step's, and
    could not complete it anyway). A gradual rollback is watched too, so that a breach during it sets
    0 at once.
    None when nothing is evaluated; a time in the past when a run is due."""
    watched = status.phase in (Phase.PROGRESSING, Phase.PAUSED) or status.rolling_back is not None
    # A candidate with traffic is judged even while an edited analysis has yet to answer its check
    # (query_check.py holds its weight): a breach of the metrics that answer still rolls back.
    if spec.analysis is None or not watched or not candidate_served(spec, status):
        return None
    last = status.last_analysis_at
    settled = step_settles_at(spec, status)
    if settled is not None and (last is None or last < settled):
        return settled
    if last is None:
        return datetime.min.replace(tzinfo=UTC)  # no step start to count from: due now
    return last + spec.analysis.interval_timedelta


def step_settles_at(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> datetime | None:
    """From when an analysis run counts for the current step: one interval after it started."""
    if spec.analysis is None or status.step_started_at is None:
        return None
    return status.step_started_at + spec.analysis.interval_timedelta


def pause_ends_at(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> datetime | None:
    """The end of the current timed pause or mirror step; None when the step is not one or has not
    started."""
    if status.current_step_index >= len(spec.steps) or status.step_started_at is None:
        return None
    step = spec.steps[status.current_step_index]
    if step.mirror is not None:
        return status.step_started_at + step.mirror.duration_timedelta
    if step.pause is None or step.pause.duration_timedelta is None:
        return None
    return status.step_started_at + step.pause.duration_timedelta


def weight_step_due(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> datetime | None:
    """When a setWeight step without analysis completes: as soon as its weight is live, which the tick
    that wrote it cannot yet count on (the write is verified after the decision). None when the step
    waits for something else: its weight, the candidate, an analysis or a command."""
    if spec.analysis is not None or status.phase is not Phase.PROGRESSING:
        return None
    if (
        status.current_step_index >= len(spec.steps)
        or spec.steps[status.current_step_index].set_weight != status.current_weight
    ):
        return None  # not a setWeight step, or one waiting to raise its weight (spec.capacity)
    ready = bool(status.candidate_available) and status.live_weight == status.current_weight
    return status.step_started_at if ready else None


def scheduled_at(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> datetime | None:
    """The earliest timed thing an active rollout waits for (its pause's or mirror's end, its next
    analysis run, its setWeight step's completion), in the past when overdue; None when it waits for
    nothing timed. Unlike next_wakeup, an end that passed still counts: a restarted operator ticks
    the longest overdue rollouts first."""
    if status.phase not in ACTIVE_PHASES:
        return None
    times = [
        pause_ends_at(spec, status),
        next_analysis_at(spec, status),
        weight_step_due(spec, status),
        next_check_at(spec, status),
    ]
    return min((at for at in times if at is not None), default=None)


def deadlines_at(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> list[datetime]:
    """When the progress deadlines that are running (Pending since, Inconclusive since) pass."""
    running = (
        (pending_limit(spec), status.pending_since),
        (inconclusive_limit(spec, status), status.inconclusive_since),
    )
    return [
        since + deadline.after_timedelta
        for deadline, since in running
        if deadline and since and deadline.action != "wait"
    ]


def next_wakeup(spec: ModelRolloutSpec, status: ModelRolloutStatus, now: datetime) -> timedelta:
    """How long after `now`, the time the decision was taken at, this rollout needs looking at again."""
    candidates = [RESYNC if status.phase in ACTIVE_PHASES else FINISHED_RESYNC]
    if status.notifications is not None and status.notifications.pending:
        candidates.append(RESYNC)  # an ended rollout too: to drop from status what was delivered
    if status.phase is Phase.GATING:
        candidates.append(GATE_POLL)
    written = status.live_weight in (None, status.current_weight) and status.live_mirror_percent in (
        None,
        status.current_mirror_percent,
    )
    if status.route_state is RouteState.WEIGHT_NOT_APPLIED:
        written = False  # e.g. one of several routes moved together did not take it
    if status.pause is not None and status.pause.reason is PauseReason.ROUTE_CONFLICT:
        written = True  # held for another writer: there is nothing to retry
    if status.route_state is not None and status.route_state.held_by_claim:
        written = True  # another rollout's rule: nothing is written
    if not written and status.phase is not Phase.FAILED:
        candidates.append(WRITE_RETRY)
    for next_run in (next_analysis_at(spec, status), next_check_at(spec, status)):
        if next_run is not None:
            candidates.append(next_run - now)
    step_down = next_step_at(status, now)
    if step_down is not None:
        candidates.append(step_down - now)
    step_due = weight_step_due(spec, status)
    if step_due is not None:
        candidates.append(step_due - now)
    if status.watch_ends_at is not None and status.watch_ends_at > now:
        candidates.append(status.watch_ends_at - now)
    pause_end = pause_ends_at(spec, status)
    # A pause over by `now` (the decision's time) no longer wakes anyone: the step is held by
    # something else (the candidate, the analysis), which wakes the rollout itself.
    if pause_end is not None and status.phase in ACTIVE_PHASES and pause_end > now:
        candidates.append(pause_end - now)
    if status.phase in ACTIVE_PHASES:
        # Only those still ahead: one that passed was acted on, and a pause it caused would spin.
        candidates.extend(at - now for at in deadlines_at(spec, status) if at > now)
    return max(min(candidates), MIN_WAKEUP)


# -- holding ---------------------------------------------------------------------------------------
# Which status changes may wait in the operator's memory instead of costing a write each tick.
#
# An active rollout evaluates its metrics every interval, and each evaluation changes its status
# (lastAnalysisAt, the values, their history), although nothing else does; likewise a weight write's
# verification only confirms, in liveWeight, the weight the status already names. Writing each of those is
# most of the status writes a rollout makes, and at 1,000 rollouts the API server's capacity is what the
# operator waits on. Such changes are held, at most MAX_STATUS_HOLD, and written with the next change that
# must be written at once: a phase, a step, a weight, a verdict, a failure count, a Prometheus error count, a
# condition, a command's result, a message, a deadline's start, or anything else in status.
#
# What an operator killed while holding loses is only what it would find again: an older lastAnalysisAt makes
# it evaluate again at once, before it acts on the step (as if it had been killed before that evaluation); the
# sequential test's totals of the older evaluation are the baseline its next evaluation counts from, so the
# events of the lost evaluation count once, in that one; the liveWeight is read back from the route at every
# tick. Every verdict and count that a decision rests on (failures, consecutive Prometheus errors, a verdict
# that changed) is written when it changes, so a restart never finds a lower failure count or misses a breach.


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
