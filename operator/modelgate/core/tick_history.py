"""What a tick adds to the rollout's history (status.stepStarts, status.weightChanges), read from
the status before and after the tick: every step entered and every weight asked for, at the tick's
time."""

from __future__ import annotations

from datetime import datetime

from modelgate.api import ModelRolloutStatus
from modelgate.api.history import MAX_STEP_STARTS, MAX_WEIGHT_CHANGES, StepStart, WeightChange


def note_history(before: ModelRolloutStatus, after: ModelRolloutStatus, now: datetime) -> ModelRolloutStatus:
    """`after` with this tick's step starts and weight change appended. A rollout starts at weight
    0, so its first change is its first weight above 0."""
    steps = _steps_started(before, after, now)
    changes = after.weight_changes
    last_weight = changes[-1].weight if changes else 0
    if after.current_weight != last_weight:
        changes = (*changes, WeightChange(weight=after.current_weight, at=now))[-MAX_WEIGHT_CHANGES:]
    if not steps and changes is after.weight_changes:
        return after
    starts = (*after.step_starts, *steps)[-MAX_STEP_STARTS:]
    return after.model_copy(update={"step_starts": starts, "weight_changes": changes})


def _steps_started(
    before: ModelRolloutStatus, after: ModelRolloutStatus, now: datetime
) -> tuple[StepStart, ...]:
    """Each step entered this tick: from the one after the step the rollout was at (the first, for a
    rollout that had not entered one) to the one it is at now."""
    if after.step_started_at != now or before.step_started_at == now:
        return ()
    same_rollout = before.rollout_started_at == after.rollout_started_at
    first = before.current_step_index + 1 if same_rollout and before.step_started_at is not None else 0
    entered = range(first, after.current_step_index + 1) or range(
        after.current_step_index, after.current_step_index + 1
    )
    return tuple(StepStart(step=index, at=now) for index in entered)
