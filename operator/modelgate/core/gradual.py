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
from modelgate.core.intents import Intent, RollBack, SetWeight
from modelgate.core.metric_verdicts import evaluate
from modelgate.core.moments import moment
from modelgate.core.reasons import Reason
from modelgate.core.tick import Tick

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


def continue_rollback(tick: Tick) -> Intent:
    """A RolledBack rollout's tick: 0, or the step-down's weight now; a breach during it sets 0."""
    rolling = tick.status.rolling_back
    if rolling is None:
        return SetWeight(0)
    analysis, run = tick.spec.analysis, tick.observed.analysis
    if analysis is not None and run is not None:
        result = evaluate(analysis, run, tick.status.analysis)
        tick.update(analysis=result.metrics, last_analysis_at=run.at)
        if result.breach is not None:
            tick.update(rolling_back=None)
            return RollBack(result.breach, Reason.METRIC_BREACH)
    weight = weight_at(rolling, tick.now)
    tick.set_weight(weight, even_when_held=True)
    if weight == 0:
        tick.update(rolling_back=None, message=f"rolled back: {_reason(tick)}")
        tick.event(Reason.ROLLBACK_COMPLETED, "the gradual rollback is complete: the candidate's weight is 0")
        return None
    tick.update(message=step_down_message(weight, rolling, _reason(tick)))
    return None


def step_down_message(weight: int, rolling: RollingBack, reason: str) -> str:
    return f"rolling back gradually: candidate weight {weight}, 0 at {moment(rolling.ends_at)}: {reason}"


def _reason(tick: Tick) -> str:
    reason = tick.status.rollback_reason
    return "" if reason is None else reason.message


def _microseconds(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
