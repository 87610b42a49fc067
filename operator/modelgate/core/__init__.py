"""The pure canary engine: `decide(spec, status, observations, now) -> Decision`.

Imports only `modelgate.api` and the standard library (an import contract in `make lint` checks it);
every moment arrives as `now`, every wait is computed from timestamps kept in status, so an operator
restart resumes where it was. Adapters (routers, metric providers) produce the types defined here.
"""

from modelgate.core.actions import Applied, Router, World, after_write, apply
from modelgate.core.engine import decide, decide_unusable
from modelgate.core.model import (
    COMMAND_ANNOTATION,
    Command,
    CommandAction,
    CommandProblem,
    Decision,
    Event,
    LiveRoute,
    MemberAvailability,
    Observations,
    Outcome,
    ReadyReplicas,
    RouteClaim,
    RouteProblem,
    SpecProblem,
    UnreadableCommand,
    WriteFailed,
    WriteResult,
)
from modelgate.core.notifying import events_to_post
from modelgate.core.reasons import ConditionType, EventType, Reason
from modelgate.core.results import (
    Accelerators,
    AnalysisRun,
    MetricQuery,
    QueryResult,
    SideBuckets,
    SideTotals,
)
from modelgate.core.stepping import analysis_due, may_hold, next_wakeup

__all__ = [
    "COMMAND_ANNOTATION",
    "Accelerators",
    "AnalysisRun",
    "Applied",
    "Command",
    "CommandAction",
    "CommandProblem",
    "ConditionType",
    "Decision",
    "Event",
    "EventType",
    "LiveRoute",
    "MemberAvailability",
    "MetricQuery",
    "Observations",
    "Outcome",
    "QueryResult",
    "ReadyReplicas",
    "Reason",
    "RouteClaim",
    "RouteProblem",
    "Router",
    "SideBuckets",
    "SideTotals",
    "SpecProblem",
    "UnreadableCommand",
    "World",
    "WriteFailed",
    "WriteResult",
    "after_write",
    "analysis_due",
    "apply",
    "decide",
    "decide_unusable",
    "events_to_post",
    "may_hold",
    "next_wakeup",
]
