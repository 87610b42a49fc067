"""What the engine reads (observations, commands) and what it asks for (actions)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from modelgate.api import ModelRolloutStatus
from modelgate.metrics.provider import QueryResult


@dataclass(frozen=True)
class LiveRoute:
    """The weights the router reads back from what is live."""

    incumbent_weight: int
    candidate_weight: int


@dataclass(frozen=True)
class RouteProblem:
    """The route cannot be used as configured (missing route, rule or backend)."""

    reason: str  # a condition reason, e.g. "RouteNotFound"
    message: str


@dataclass(frozen=True)
class MetricQuery:
    query: str  # the PromQL that ran, for status and rollbackReason
    result: QueryResult


@dataclass(frozen=True)
class AnalysisRun:
    """One evaluation of every metric, taken at `at`."""

    at: datetime
    request_count: QueryResult
    metrics: Mapping[str, MetricQuery]


class CommandAction(StrEnum):
    PROMOTE = "promote"
    PROMOTE_FULL = "promote-full"
    ABORT = "abort"
    RESUME = "resume"
    RETRY = "retry"


@dataclass(frozen=True)
class Command:
    """A manual command from the CLI; `id` makes handling it idempotent across restarts."""

    action: CommandAction
    id: str


@dataclass(frozen=True)
class Observations:
    generation: int
    candidate_available: bool
    candidate_message: str
    route: LiveRoute | RouteProblem
    analysis: AnalysisRun | None = None
    command: Command | None = None


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True)
class SetWeight:
    """Route `candidate_weight`% to the candidate and the rest to the incumbent (absolute, idempotent)."""

    candidate_weight: int

    @property
    def incumbent_weight(self) -> int:
        return 100 - self.candidate_weight


@dataclass(frozen=True)
class RecordEvent:
    type: EventType
    reason: str
    message: str


Action = SetWeight | RecordEvent


@dataclass(frozen=True)
class Decision:
    status: ModelRolloutStatus
    actions: tuple[Action, ...] = field(default_factory=tuple)

    @property
    def weight_change(self) -> SetWeight | None:
        changes = [a for a in self.actions if isinstance(a, SetWeight)]
        return changes[-1] if changes else None

    @property
    def events(self) -> list[RecordEvent]:
        return [a for a in self.actions if isinstance(a, RecordEvent)]
