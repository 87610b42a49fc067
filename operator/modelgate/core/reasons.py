"""Every reason the operator gives, for Events and conditions, and the condition types it keeps.

These are the only spellings: the engine, the metrics export, the CLI and the docs test all use the
members, so nothing parses a reason back out of a message.
"""

from __future__ import annotations

from enum import StrEnum


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
    # A rule likely to roll back a candidate as good as the incumbent (core.false_rollback).
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

    @property
    def event_type(self) -> EventType:
        return EventType.WARNING if self in _WARNINGS else EventType.NORMAL


_WARNINGS = frozenset(
    {
        Reason.ROLLED_BACK,
        Reason.INVALID_SPEC,
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
    }
)
