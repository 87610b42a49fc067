"""A status written by an operator before status.pause, capacityWaitSince, routeState and
candidateAvailable, whose state was known only from conditions: read once, into the typed fields, so
that an upgrade does not let a paused rollout go on, forget a wait, warn twice of a write that did not
take, or answer another writer twice. The only place core reads a condition; it goes when no such
status can be left (two releases on)."""

from __future__ import annotations

from datetime import datetime

from modelgate.api import ConditionStatus, ModelRolloutStatus, PauseReason, Phase, RolloutPause, RouteState
from modelgate.core import conditions as cond
from modelgate.core.reasons import ConditionType, Reason


def with_state_from_conditions(status: ModelRolloutStatus, now: datetime) -> ModelRolloutStatus:
    return _with_pause(_with_capacity_wait(_with_route_state(_with_candidate_available(status))), now)


def _with_route_state(status: ModelRolloutStatus) -> ModelRolloutStatus:
    ready = cond.condition(status.conditions, ConditionType.ROUTE_READY)
    if status.route_state is not None or ready is None or ready.reason not in set(RouteState):
        return status
    return status.model_copy(update={"route_state": RouteState(ready.reason)})


def _with_candidate_available(status: ModelRolloutStatus) -> ModelRolloutStatus:
    available = cond.condition(status.conditions, ConditionType.CANDIDATE_AVAILABLE)
    if status.candidate_available is not None or available is None:
        return status
    return status.model_copy(update={"candidate_available": available.status is ConditionStatus.TRUE})


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
