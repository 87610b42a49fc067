"""Kubernetes-style conditions: the transition time moves only when the status does."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from modelgate.api import Condition, ConditionStatus, ModelRolloutStatus, RouteState
from modelgate.core.reasons import ConditionType, Reason


def set_condition(
    conditions: tuple[Condition, ...],
    type_: ConditionType | StrEnum,
    status: bool,
    reason: Reason | StrEnum,
    message: str,
    now: datetime,
    generation: int,
) -> tuple[Condition, ...]:
    new_status = ConditionStatus.TRUE if status else ConditionStatus.FALSE
    existing = next((c for c in conditions if c.type == type_), None)
    if existing is not None and _says(existing, new_status, reason, message, generation):
        if conditions[-1] is existing:
            return conditions  # unchanged, and already where a set condition goes
        return (*(c for c in conditions if c is not existing), existing)
    since = existing.last_transition_time if existing and existing.status == new_status else now
    updated = Condition(
        type=type_,
        status=new_status,
        reason=reason,
        message=message,
        last_transition_time=since,
        observed_generation=generation,
    )
    return (*(c for c in conditions if c.type != type_), updated)


def _says(
    condition: Condition, status: ConditionStatus, reason: StrEnum, message: str, generation: int
) -> bool:
    """Whether the condition says this already (then it is kept as it is, its time too)."""
    return (
        condition.status == status
        and condition.reason == reason
        and condition.message == message
        and condition.observed_generation == generation
    )


def with_route_state(
    status: ModelRolloutStatus, state: RouteState, message: str, now: datetime, generation: int
) -> ModelRolloutStatus:
    """The route's state, and the RouteReady condition that says it for people."""
    ready = state is RouteState.FOUND
    conditions = set_condition(
        status.conditions, ConditionType.ROUTE_READY, ready, Reason(state.value), message, now, generation
    )
    if status.route_state is state and conditions is status.conditions:
        return status  # nothing changes: no copy
    return status.model_copy(update={"route_state": state, "conditions": conditions})


def condition(conditions: tuple[Condition, ...], type_: ConditionType) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)
