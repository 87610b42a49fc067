"""Gradual rollback (spec.rollback.gradual): instead of 0 at once, the candidate's weight falls
linearly from where it was to 0 over the duration, for incumbents that need to warm their caches.

Which rollbacks step down: `modelgate abort` and a progress deadline's rollback, which say nothing
against the candidate's answers. A metric breach, before or during the step-down, sets 0 at once;
so does a rollback on Prometheus errors (chosen because running the candidate blind is the risk, and
a step-down would go on blind, where no breach could stop it) and a second `modelgate abort`.

The weight is computed from status.rollingBack and `now` alone, so a restarted operator carries on
where it was; the phase is RolledBack from the start (the decision is taken), with rollingBack set
until the weight reaches 0.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase, RollingBack
from modelgate.core.intents import AskWeight, Intent, Noted, RollBack, Say, SetWeight, fields
from modelgate.core.moments import moment
from modelgate.core.reasons import Reason
from modelgate.core.tick import TickView

GRADUAL_CAUSES = frozenset({Reason.ABORTED, Reason.PROGRESS_DEADLINE_EXCEEDED})
# A step-down is looked at this often at most: one weight write a second, whatever the duration.
STEP_INTERVAL = timedelta(seconds=1)


def gradual_start(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, cause: Reason, now: datetime
) -> RollingBack | None:
    """The step-down a rollback for `cause` begins, or None when it sets 0 at once."""
    gradual = spec.rollback.gradual
    stepping = status.phase in (Phase.PROGRESSING, Phase.PAUSED) and status.current_weight > 0
    if gradual is None or cause not in GRADUAL_CAUSES or not stepping:
        return None
    return RollingBack(
        started_at=now, from_weight=status.current_weight, ends_at=now + gradual.duration_timedelta
    )


def weight_at(rolling: RollingBack, now: datetime) -> int:
    """The candidate's weight at `now`: on the line from fromWeight at startedAt to 0 at endsAt,
    rounded up to a whole percent, so that it reaches 0 at endsAt and not before."""
    total = _microseconds(rolling.ends_at - rolling.started_at)
    left = _microseconds(rolling.ends_at - now)
    if left <= 0 or total <= 0:
        return 0
    return min(rolling.from_weight, -(-rolling.from_weight * left // total))


def next_step_at(status: ModelRolloutStatus, now: datetime) -> datetime | None:
    """When the weight next falls by a whole percent (no sooner than STEP_INTERVAL, no later than
    endsAt); None when no step-down is under way."""
    rolling = status.rolling_back
    if rolling is None or rolling.from_weight == 0:
        return None
    below = weight_at(rolling, now) - 1  # the weight falls below its current value once left <= this
    total = rolling.ends_at - rolling.started_at
    falls_at = rolling.ends_at - total * below / rolling.from_weight
    return min(max(falls_at, now + STEP_INTERVAL), max(rolling.ends_at, now))


def record_rollback_run(tick: TickView) -> Noted | None:
    """Bookkeeping of a gradual rollback's tick: the analysis run that watched it, if one ran (a
    breach ends the step-down: rollback_verdict sets 0)."""
    run, result = tick.observed.analysis, tick.analysed
    if tick.status.rolling_back is None or run is None or result is None:
        return None
    ended = {"rolling_back": None} if result.breach is not None else {}
    return Noted((fields(analysis=result.metrics, last_analysis_at=run.at, **ended),))


def rollback_verdict(tick: TickView) -> Intent:
    """A breach during a gradual rollback sets 0 at once (the engine judges a run only while the
    rollout steps down)."""
    result = tick.analysed
    if tick.observed.analysis is None or result is None or result.breach is None:
        return None
    return RollBack(result.breach, Reason.METRIC_BREACH)


def step_down(tick: TickView) -> Intent | Noted:
    """A RolledBack rollout's tick: 0, or the step-down's weight now (written even over another
    writer's, as a rollback is)."""
    rolling = tick.status.rolling_back
    if rolling is None:
        return SetWeight(0)
    weight = weight_at(rolling, tick.now)
    if weight == 0:
        complete = "the gradual rollback is complete: the candidate's weight is 0"
        done = fields(rolling_back=None, message=f"rolled back: {_reason(tick)}")
        return Noted((AskWeight(0, even_when_held=True), done, Say(Reason.ROLLBACK_COMPLETED, complete)))
    message = fields(message=step_down_message(weight, rolling, _reason(tick)))
    return Noted((AskWeight(weight, even_when_held=True), message))


def step_down_message(weight: int, rolling: RollingBack, reason: str) -> str:
    return f"rolling back gradually: candidate weight {weight}, 0 at {moment(rolling.ends_at)}: {reason}"


def _reason(tick: TickView) -> str:
    reason = tick.status.rollback_reason
    return "" if reason is None else reason.message


def _microseconds(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
