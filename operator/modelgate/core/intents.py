"""What a feature rule asks of a tick, as data: the engine (core/engine.py) evaluates the rules of a
phase in one ordered list, and the first that returns an intent (not None) decides the tick."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from modelgate.api import RollbackReason
from modelgate.core.reasons import Reason


class HoldReason(StrEnum):
    """Why the rollout stays where it is this tick."""

    ROUTE_CONFLICT = "RouteConflict"  # another writer's weight stays until `modelgate resume`
    DEADLINE = "Deadline"  # a progress deadline paused it (its pause is new or goes on)
    CANDIDATE_UNAVAILABLE = "CandidateUnavailable"
    QUERIES_UNANSWERED = "QueriesUnanswered"  # no traffic moves before the analysis's queries answer
    PROMETHEUS_ERRORS = "PrometheusErrors"  # paused on failed queries until `modelgate resume`
    CAPACITY = "Capacity"  # the step's weight waits for Ready candidate replicas
    WATCHING = "Watching"  # the watch window has not passed
    ROLLBACK_HELD = "RollbackHeld"  # a rollback in the watch window waits for the incumbent


@dataclass(frozen=True)
class Hold:
    """No step advances this tick; `message` (when set) becomes the status message."""

    reason: HoldReason
    wake_at: datetime | None = None  # when the hold ends by itself, if it does
    message: str | None = None


@dataclass(frozen=True)
class RollBack:
    reason: RollbackReason
    cause: Reason


@dataclass(frozen=True)
class Fail:
    """The rollout cannot go on (a progress deadline whose action is fail)."""

    reason: Reason
    message: str


@dataclass(frozen=True)
class SetWeight:
    weight: int


@dataclass(frozen=True)
class EnterStep:
    """Into step `index` (past the last: success, or the watch window); with `through_complete`, on
    through the steps already complete (as when the steps start)."""

    index: int
    through_complete: bool = True


@dataclass(frozen=True)
class Succeed:
    """Straight to 100%: a full release, `modelgate promote --full`."""


@dataclass(frozen=True)
class StartOver:
    """From step 0 again, the status fresh (`modelgate retry`)."""

    reason: Reason
    message: str


@dataclass(frozen=True)
class Advance:
    """On to the next stage: from Pending to the gate or step 0, through the completed steps, or out
    of a watch window that has passed."""


Intent = Hold | RollBack | Fail | SetWeight | EnterStep | Succeed | StartOver | Advance | None
