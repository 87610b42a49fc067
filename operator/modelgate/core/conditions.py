"""Kubernetes-style conditions: the transition time moves only when the status does."""

from __future__ import annotations

from datetime import datetime

from modelgate.api import Condition, ConditionStatus

# Condition types the engine maintains.
ROUTE_READY = "RouteReady"
CANDIDATE_AVAILABLE = "CandidateAvailable"
ANALYSIS_HEALTHY = "AnalysisHealthy"
COMPLETED = "Completed"


def set_condition(
    conditions: tuple[Condition, ...],
    type_: str,
    status: bool,
    reason: str,
    message: str,
    now: datetime,
    generation: int,
) -> tuple[Condition, ...]:
    new_status = ConditionStatus.TRUE if status else ConditionStatus.FALSE
    existing = next((c for c in conditions if c.type == type_), None)
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


def condition(conditions: tuple[Condition, ...], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)
