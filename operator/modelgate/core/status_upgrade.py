"""A status written by an operator before status.pause (or status.capacityWaitSince), whose pause (or
capacity wait) was known only from a condition: read once, into the typed field, so that an upgrade
does not let a paused rollout go on nor forget a wait. The only place core reads a condition to decide;
it goes when no such status can be left (two releases on)."""

from __future__ import annotations

from datetime import datetime

from modelgate.api import ConditionStatus, ModelRolloutStatus, PauseReason, Phase, RolloutPause
from modelgate.core import conditions as cond
from modelgate.core.reasons import ConditionType, Reason


def with_state_from_conditions(status: ModelRolloutStatus, now: datetime) -> ModelRolloutStatus:
    return _with_pause(_with_capacity_wait(status), now)


def _with_capacity_wait(status: ModelRolloutStatus) -> ModelRolloutStatus:
    capacity = cond.condition(status.conditions, ConditionType.CANDIDATE_CAPACITY)
    if (
        status.capacity_wait_since is not None
        or capacity is None
        or capacity.status is not ConditionStatus.FALSE
    ):
        return status
    return status.model_copy(update={"capacity_wait_since": capacity.last_transition_time})


def _with_pause(status: ModelRolloutStatus, now: datetime) -> ModelRolloutStatus:
    if status.pause is not None:
        return status
    reason = _older_pause(status)
    if reason is None:
        return status
    pause = RolloutPause(reason=reason, since=now, message=status.message or str(reason))
    return status.model_copy(update={"pause": pause})


def _older_pause(status: ModelRolloutStatus) -> PauseReason | None:
    ready = cond.condition(status.conditions, ConditionType.ROUTE_READY)
    if ready is not None and ready.reason == Reason.ROUTE_CONFLICT:
        return PauseReason.ROUTE_CONFLICT
    if status.phase not in (Phase.PENDING, Phase.PAUSED):
        return None
    healthy = cond.condition(status.conditions, ConditionType.ANALYSIS_HEALTHY)
    if healthy is not None and healthy.reason == Reason.PROGRESS_DEADLINE_EXCEEDED:
        pending = status.phase is Phase.PENDING or status.inconclusive_since is None
        return PauseReason.PENDING_DEADLINE if pending else PauseReason.INCONCLUSIVE_DEADLINE
    if status.phase is Phase.PENDING:
        return None
    if healthy is not None and healthy.reason == Reason.PROMETHEUS_UNAVAILABLE:
        return PauseReason.PROMETHEUS_ERRORS
    if status.rollback_reason is not None:
        return PauseReason.ROLLBACK_HELD
    return PauseReason.INDEFINITE_STEP
