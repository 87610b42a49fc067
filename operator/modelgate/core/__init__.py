"""The pure canary engine: `decide(spec, status, observations, now) -> Decision`.

Imports only `modelgate.api` and the standard library (an import contract in `make lint` checks it);
every moment arrives as `now`, every wait is computed from timestamps kept in status, so an operator
restart resumes where it was. Adapters (routers, metric providers) produce the types defined here.
"""

from modelgate.core.engine import decide, decide_unusable
from modelgate.core.events import events_to_post
from modelgate.core.holding import may_hold
from modelgate.core.model import (
    COMMAND_ANNOTATION,
    Command,
    CommandAction,
    CommandProblem,
    Decision,
    Event,
    LiveRoute,
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
from modelgate.core.reasons import ConditionType, EventType, Reason
from modelgate.core.results import (
    Accelerators,
    AnalysisRun,
    MetricQuery,
    QueryResult,
    SideBuckets,
    SideTotals,
)
from modelgate.core.schedule import analysis_due, next_wakeup
from modelgate.core.writes import settle_write

__all__ = [
    "COMMAND_ANNOTATION",
    "Accelerators",
    "AnalysisRun",
    "Command",
    "CommandAction",
    "CommandProblem",
    "ConditionType",
    "Decision",
    "Event",
    "EventType",
    "LiveRoute",
    "MetricQuery",
    "Observations",
    "Outcome",
    "QueryResult",
    "ReadyReplicas",
    "Reason",
    "RouteClaim",
    "RouteProblem",
    "SideBuckets",
    "SideTotals",
    "SpecProblem",
    "UnreadableCommand",
    "WriteFailed",
    "WriteResult",
    "analysis_due",
    "decide",
    "decide_unusable",
    "events_to_post",
    "may_hold",
    "next_wakeup",
    "settle_write",
]
