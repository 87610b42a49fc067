"""The operator's words: every reason it gives, for Events and conditions, and the condition types it
keeps; conditions whose transition time moves only when the status does; the lengths the status
schema allows; counts and moments as messages show them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum

from modelgate.api import Condition, ConditionStatus, ModelRolloutStatus, RouteState
from modelgate.api.bounds import EXACT_INT_MAX

# -- reasons ---------------------------------------------------------------------------------------
# Every reason the operator gives, for Events and conditions, and the condition types it keeps.
#
# These are the only spellings: the engine, the metrics export, the CLI and the docs test all use the members,
# so nothing parses a reason back out of a message.


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class ConditionType(StrEnum):
    ROUTE_READY = "RouteReady"
    CANDIDATE_AVAILABLE = "CandidateAvailable"
    ANALYSIS_HEALTHY = "AnalysisHealthy"
    COMPLETED = "Completed"
    CANDIDATE_CAPACITY = "CandidateCapacity"
    WATCHING = "Watching"
    INCUMBENT_AVAILABLE = "IncumbentAvailable"
    ANALYSIS_READY = "AnalysisReady"
    POLICY_DRIFT = "PolicyDrift"


class Reason(StrEnum):
    # The rollout's life.
    NEW_ROLLOUT = "NewRollout"
    SPEC_CHANGED = "SpecChanged"
    RETRY = "Retry"
    ROLLOUT_STARTED = "RolloutStarted"
    WEIGHT_SET = "WeightSet"
    MIRROR_SET = "MirrorSet"
    MIRROR_REMOVED = "MirrorRemoved"
    PAUSED = "Paused"
    STEP_COMPLETED = "StepCompleted"
    ROLLOUT_SUCCEEDED = "RolloutSucceeded"
    SUCCEEDED = "Succeeded"
    ROLLED_BACK = "RolledBack"
    # A gradual rollback's weight reached 0.
    ROLLBACK_COMPLETED = "RollbackCompleted"
    INVALID_SPEC = "InvalidSpec"
    # A tick raised what the operator does not expect (a bug): Failed, the traffic returned.
    INTERNAL_ERROR = "InternalError"
    # Why a rollback happened.
    METRIC_BREACH = "MetricBreach"
    ABORTED = "Aborted"
    # Kept from v1alpha1's first release (the spec's field is `onPrometheusError`): metric queries
    # failed `maxConsecutiveErrors` times in a row, whichever provider ran them.
    PROMETHEUS_UNAVAILABLE = "PrometheusUnavailable"
    # Analysis health.
    PASSING = "Passing"
    INCONCLUSIVE = "Inconclusive"
    QUERY_ERROR = "QueryError"
    ANALYSIS_PAUSED = "AnalysisPaused"
    RESUMED = "Resumed"
    PROGRESS_DEADLINE_EXCEEDED = "ProgressDeadlineExceeded"
    # A rule likely to roll back a candidate as good as the incumbent (core/results.py).
    FALSE_ROLLBACK_LIKELY = "FalseRollbackLikely"
    # Whether the analysis's queries answer (before the first weight, after an edit of spec.analysis).
    QUERIES_ANSWERED = "QueriesAnswered"
    QUERY_UNANSWERED = "QueryUnanswered"
    # Manual commands.
    PROMOTED = "Promoted"
    COMMAND_IGNORED = "CommandIgnored"
    # The candidate.
    AVAILABLE = "Available"
    NOT_AVAILABLE = "NotAvailable"
    # Capacity before weight (spec.capacity.enforce).
    INSUFFICIENT_CAPACITY = "InsufficientCapacity"
    CAPACITY_AVAILABLE = "CapacityAvailable"
    # The watch window after the last step (spec.watch).
    WATCH_STARTED = "WatchStarted"
    WATCH_PASSED = "WatchPassed"
    ROLLBACK_HELD = "RollbackHeld"
    SCALED_DOWN = "ScaledDown"
    SCALE_DOWN_FAILED = "ScaleDownFailed"
    # A notification a receiver never took, after every retry (notifications/delivery.py).
    NOTIFICATION_FAILED = "NotificationFailed"
    # Deleting a rollout with spec.rollback.onDelete ReturnTraffic.
    TRAFFIC_RETURNED = "TrafficReturned"
    # The evaluation gate (spec.gate).
    GATE_STARTED = "GateStarted"
    GATE_CHECK_PASSED = "GateCheckPassed"
    GATE_CHECK_FAILED = "GateCheckFailed"
    GATE_CHECK_INCONCLUSIVE = "GateCheckInconclusive"
    GATE_PASSED = "GatePassed"
    GATE_REJECTED = "GateRejected"
    # The route.
    ROUTE_FOUND = "RouteFound"
    ROUTE_NOT_FOUND = "RouteNotFound"
    RULE_NOT_FOUND = "RuleNotFound"
    BACKEND_NOT_FOUND = "BackendNotFound"
    BACKEND_AMBIGUOUS = "BackendAmbiguous"
    WEIGHT_NOT_APPLIED = "WeightNotApplied"
    # Another writer changed the weights: re-asserted once, then held (no more writes).
    ROUTE_OVERWRITTEN = "RouteOverwritten"
    ROUTE_CONFLICT = "RouteConflict"
    # Another rollout owns the rule (routers/claims.py): held without writes; or handed over to it.
    ROUTE_CLAIMED = "RouteClaimed"
    INCUMBENT_NOT_SERVED = "IncumbentNotServed"
    ROUTE_HANDED_OVER = "RouteHandedOver"
    # spec.policyRef (policy_plans.py): the policy changed after it was pinned, or is missing.
    POLICY_CHANGED = "PolicyChanged"
    POLICY_UNRESOLVED = "PolicyUnresolved"
    # A one-edit rollout's generated candidate (spec.candidatePatch).
    CANDIDATE_GENERATED = "CandidateGenerated"
    GENERATED_REMOVED = "GeneratedRemoved"
    INCUMBENT_PATCHED = "IncumbentPatched"
    CANDIDATE_RELEASED = "CandidateReleased"
    GENERATION_FAILED = "GenerationFailed"

    @property
    def event_type(self) -> EventType:
        return EventType.WARNING if self in _WARNINGS else EventType.NORMAL


_WARNINGS = frozenset(
    {
        Reason.ROLLED_BACK,
        Reason.INVALID_SPEC,
        Reason.POLICY_UNRESOLVED,
        Reason.INTERNAL_ERROR,
        Reason.ANALYSIS_PAUSED,
        Reason.PROGRESS_DEADLINE_EXCEEDED,
        Reason.FALSE_ROLLBACK_LIKELY,
        Reason.QUERY_UNANSWERED,
        Reason.COMMAND_IGNORED,
        Reason.INSUFFICIENT_CAPACITY,
        Reason.ROUTE_NOT_FOUND,
        Reason.RULE_NOT_FOUND,
        Reason.BACKEND_NOT_FOUND,
        Reason.BACKEND_AMBIGUOUS,
        Reason.WEIGHT_NOT_APPLIED,
        Reason.ROUTE_OVERWRITTEN,
        Reason.ROUTE_CONFLICT,
        Reason.ROUTE_CLAIMED,
        Reason.INCUMBENT_NOT_SERVED,
        Reason.GATE_CHECK_FAILED,
        Reason.GATE_CHECK_INCONCLUSIVE,
        Reason.GATE_REJECTED,
        Reason.ROLLBACK_HELD,
        Reason.SCALE_DOWN_FAILED,
        Reason.NOTIFICATION_FAILED,
        Reason.GENERATION_FAILED,
    }
)


# -- conditions ------------------------------------------------------------------------------------
# Kubernetes-style conditions: the transition time moves only when the status does.


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


# -- limits ----------------------------------------------------------------------------------------
# Lengths the status schema allows (api/status.py, the CRD), so that a long error text, query or message from
# outside is shortened instead of making a status the API server would refuse.


ANALYSIS_MESSAGE = 1024  # MetricAnalysis.message, RollbackReason.message, InternalError.message
ERROR_TYPE = 253  # InternalError.type
QUERY = 4096  # MetricAnalysis.query, RollbackReason.query
STATUS_MESSAGE = 4096  # ModelRolloutStatus.message
CONDITION_MESSAGE = 32768  # Condition.message


def clip(text: str, limit: int, *, utf8: bool = False) -> str:
    """`text` cut to `limit` characters (the CRD's maxLength), or with `utf8` to `limit` UTF-8 bytes
    (what Events' validation counts), ending in "..." when cut and never mid-character."""
    size = len(text.encode()) if utf8 else len(text)
    if size <= limit:
        return text
    if not utf8:
        return text[: limit - 3] + "..."
    return text.encode()[: limit - 3].decode(errors="ignore") + "..."


def one_more(count: int) -> int:
    """A count kept in status, one up; it stays at the schema's largest integer, which a status
    written by hand may hold."""
    return min(count + 1, EXACT_INT_MAX)


# -- wording ---------------------------------------------------------------------------------------
# A count with its noun in the number it takes ("1 breach", "2 breaches"): messages never say "breach(es)".


def how_many(count: float, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, plural unless the count is 1; `plural` where adding "s" is wrong."""
    shown = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{shown} {noun if count == 1 else plural or noun + 's'}"


# -- moments ---------------------------------------------------------------------------------------
# A moment as messages show it: to the second, in UTC and saying so (a message is read in other time zones,
# and days later), never with microseconds or an offset to decode.


def moment(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
