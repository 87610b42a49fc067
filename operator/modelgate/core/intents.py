"""What a feature rule asks of a tick, as data: the engine (core/engine.py) evaluates the rules of a
phase in one ordered list (core/policy.py), and the first that returns an intent (not None) decides
the tick. What a rule or a bookkeeping step saw is data too (the effects below), which the engine
alone records (core/fold.py): no rule writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from modelgate.api import PauseReason, RollbackReason, RouteState
from modelgate.core.model import Event
from modelgate.core.reasons import ConditionType, Reason


@dataclass(frozen=True)
class Hold:
    """No step advances this tick; `message` (when set) becomes the status message. `pause`: the
    pause that holds the rollout (status.pause), when one does; a wait (for the candidate, its
    capacity, the queries, the watch window's end) has none, and ends by itself.
    With `cause`, the pause begins (or goes on) in this tick, and the engine records it: status.pause
    saying `detail`, phase Paused (a Pending rollout stays Pending), condition AnalysisHealthy False
    for `cause`, and `event` (said once, when the pause begins)."""

    message: str | None = None
    pause: PauseReason | None = None
    cause: Reason | None = None
    detail: str = ""
    event: Event | None = None
    without_events: tuple[str, ...] = ()  # status.pause.metricsWithoutEvents, when the pause begins


@dataclass(frozen=True)
class RollBack:
    reason: RollbackReason
    cause: Reason


@dataclass(frozen=True)
class Fail:
    """The rollout cannot go on (a progress deadline whose action is fail), said in `event` if set."""

    reason: Reason
    message: str
    event: Event | None = None


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
class RaiseWeight:
    """The current setWeight step raises its weight, which waited for the candidate's capacity: the
    step's clock starts now, and the rollout goes on through the steps already complete."""

    index: int
    weight: int


@dataclass(frozen=True)
class Advance:
    """On to the next stage: from Pending to the gate or step 0, through the completed steps, or out
    of a watch window that has passed."""


Intent = Hold | RollBack | Fail | SetWeight | EnterStep | Succeed | StartOver | RaiseWeight | Advance | None


# -- what a rule or a bookkeeping step saw, for the engine to record (core/fold.py) ------------------
@dataclass(frozen=True)
class Fields:
    """Status fields and their new values."""

    values: Mapping[str, object]


def fields(**values: object) -> Fields:
    return Fields(values)


@dataclass(frozen=True)
class Say:
    """An Event."""

    reason: Reason
    message: str


@dataclass(frozen=True)
class SetCondition:
    type: ConditionType
    ok: bool
    reason: Reason
    message: str


@dataclass(frozen=True)
class BeginPause:
    """status.pause for `reason`, unless the same pause goes on or a route conflict holds."""

    reason: PauseReason
    message: str


@dataclass(frozen=True)
class EndPause:
    """No pause, if the pause is for one of `reasons`."""

    reasons: tuple[PauseReason, ...]


@dataclass(frozen=True)
class SetRouteState:
    state: RouteState
    message: str


@dataclass(frozen=True)
class AskWeight:
    """The candidate weight to write (unless live, or the route is held for another writer and
    this is not a rollback's: `even_when_held`)."""

    weight: int
    even_when_held: bool = False


@dataclass(frozen=True)
class StepNote:
    """What the current step waits for, as the status message."""

    text: str


Effect = Fields | Say | SetCondition | BeginPause | EndPause | SetRouteState | AskWeight | StepNote


@dataclass(frozen=True)
class Noted:
    """A rule's "record this and go on": the engine folds `effects`, then asks the next rule."""

    effects: tuple[Effect, ...]
