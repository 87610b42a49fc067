"""What a tick adds to the rollout's history (status.stepStarts, status.weightChanges), read from
the status before and after the tick: every step entered and every weight asked for, at the tick's
time, in seconds after the rollout started."""

from __future__ import annotations

from datetime import datetime

from modelgate.api import ModelRolloutStatus
from modelgate.api.history import MAX_WEIGHT_CHANGES, WeightChange


def note_history(before: ModelRolloutStatus, after: ModelRolloutStatus, now: datetime) -> ModelRolloutStatus:
    """`after` with this tick's step starts and weight change appended. A rollout starts at weight
    0, so its first change is its first weight above 0."""
    started = after.rollout_started_at
    if started is None:
        return after
    offset = round(max(0.0, (now - started).total_seconds()), 3)
    starts = (*after.step_starts, *_steps_entered(before, after, now, offset))
    changes = after.weight_changes
    if after.current_weight != (changes[-1].weight if changes else 0):
        changes = (*changes, WeightChange(weight=after.current_weight, seconds=offset))[-MAX_WEIGHT_CHANGES:]
    if len(starts) == len(after.step_starts) and changes is after.weight_changes:
        return after
    return after.model_copy(update={"step_starts": starts, "weight_changes": changes})


def _steps_entered(
    before: ModelRolloutStatus, after: ModelRolloutStatus, now: datetime, offset: float
) -> tuple[float, ...]:
    """The start of each step entered this tick, index by index: from the one after the step the
    rollout was at (the first, for a rollout that had not entered one) to the one it is at now.
    Nothing when the record does not end where they begin: the end of the last step entered again
    (after a watch window), or a rollout begun before this record, whose earlier steps it lacks."""
    if after.step_started_at != now or before.step_started_at == now:
        return ()
    same_rollout = before.rollout_started_at == after.rollout_started_at
    first = before.current_step_index + 1 if same_rollout and before.step_started_at is not None else 0
    if first != len(after.step_starts):
        return ()
    return (offset,) * (after.current_step_index + 1 - first)
