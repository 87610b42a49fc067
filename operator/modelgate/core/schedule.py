"""When things are due, computed from timestamps in status (never from how long the operator ran)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, PauseReason, Phase, RouteState
from modelgate.core.deadlines import inconclusive_limit, pending_limit
from modelgate.core.gradual import next_step_at
from modelgate.core.query_check import next_check_at
from modelgate.core.stage import candidate_served
from modelgate.core.writes import WRITE_RETRY as WRITE_RETRY  # re-exported: every wait is named here

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
