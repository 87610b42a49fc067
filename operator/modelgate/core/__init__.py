"""The pure canary engine: `decide(spec, status, observations, now) -> Decision`.

Imports nothing from kopf, kubernetes or any HTTP client; every moment arrives as `now`, every wait
is computed from timestamps kept in status, so an operator restart resumes where it was.
"""

from modelgate.core.engine import decide
from modelgate.core.model import (
    AnalysisRun,
    Command,
    CommandAction,
    Decision,
    EventType,
    LiveRoute,
    Observations,
    RecordEvent,
    RouteProblem,
    SetWeight,
)
from modelgate.core.schedule import analysis_due, next_wakeup

__all__ = [
    "AnalysisRun",
    "Command",
    "CommandAction",
    "Decision",
    "EventType",
    "LiveRoute",
    "Observations",
    "RecordEvent",
    "RouteProblem",
    "SetWeight",
    "analysis_due",
    "decide",
    "next_wakeup",
]
