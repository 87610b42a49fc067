"""What a feature rule asks of a tick, as data: the engine (core/engine.py) evaluates the rules of a
phase in one ordered list, and the first that returns an intent (not None) decides the tick."""

from __future__ import annotations

from dataclasses import dataclass

from modelgate.api import PauseReason, RollbackReason
from modelgate.core.reasons import Reason


@dataclass(frozen=True)
class Hold:
    """No step advances this tick; `message` (when set) becomes the status message. `pause`: the
    pause that holds the rollout (status.pause), when one does; a wait (for the candidate, its
    capacity, the queries, the watch window's end) has none, and ends by itself."""

    message: str | None = None
    pause: PauseReason | None = None


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
