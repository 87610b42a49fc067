"""The accumulator of one tick: the status being decided, the weight to write, the Events and the
outcome, with the small state changes (update, note, event, condition, pause, set a weight) that the
engine (core/engine.py) and its fold (core/fold.py) make. The feature rules read it (spec, status,
observations, now) and return intents and effects (core/intents.py); they never write it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from modelgate.api import (
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RolloutPause,
    RouteState,
    Step,
)
from modelgate.core import conditions as cond
from modelgate.core import limits
from modelgate.core.actions import TickEffects, tick_actions
from modelgate.core.metric_verdicts import Evaluation
from modelgate.core.model import Decision, Event, LiveRoute, Observations, Outcome
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.stage import STEPPING_PHASES, mirror_wanted, watching


class TickView(Protocol):
    """What a rule may read of a tick: read-only, so a rule that writes fails type checking."""

    @property
    def spec(self) -> ModelRolloutSpec: ...
    @property
    def before(self) -> ModelRolloutStatus: ...
    @property
    def status(self) -> ModelRolloutStatus: ...
    @property
    def observed(self) -> Observations: ...
    @property
    def now(self) -> datetime: ...
    @property
    def weight(self) -> int | None: ...
    @property
    def may_write(self) -> bool: ...
    @property
    def analysed(self) -> Evaluation | None: ...
    @property
    def weights_live(self) -> bool: ...
    @property
    def step(self) -> Step: ...
    @property
    def at_indefinite_pause(self) -> bool: ...
    @property
    def current_step_removed(self) -> bool: ...
    @property
    def stepping(self) -> bool: ...
    @property
    def error_paused(self) -> bool: ...
    def paused_by(self, *reasons: PauseReason) -> bool: ...


class Tick:
    """The engine's accumulator; the rules see it as a `TickView`."""

    def __init__(
        self, spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, now: datetime
    ):
        self.spec = spec
        self.before = status  # the status the tick started from
        self.status = status
        self.observed = observed
        self.now = now
        self.weight: int | None = None
        self.may_write = False  # whether this tick may write the route (set_weight says)
        self.events: list[Event] = []
        self.outcome: Outcome | None = None
        self.scale_down_incumbent = False  # set when the watch window passed and spec.watch asks for it
        self.analysed: Evaluation | None = None  # this tick's analysis run, judged before the policy

    def decision(self, wake_at: Callable[[Decision], datetime]) -> Decision:
        """The tick's decision: its status, its actions (built once, here), and `wake_at` of it."""
        rolled_back = self.outcome is not None and self.outcome.phase is Phase.ROLLED_BACK
        effects = TickEffects(self.weight, tuple(self.events), rolled_back, self.scale_down_incumbent)
        actions = tick_actions(self.spec, self.before, self.observed, self.status, effects)
        decided = Decision(self.status, actions, self.outcome)
        return replace(decided, wake_at=wake_at(decided))

    def update(self, **fields: object) -> None:
        # model_copy does not validate, so the message is kept within the schema's length here.
        if isinstance(message := fields.get("message"), str):
            fields["message"] = limits.clip(message, limits.STATUS_MESSAGE)
        # Most ticks write again what is there (the generation, the weight, ...): then no copy.
        for name, value in fields.items():
            if getattr(self.status, name) is not value:
                self.status = self.status.model_copy(update=fields)
                return

    def note(self, text: str) -> None:
        """What the current step waits for, as the status message."""
        self.update(message=f"step {self.status.current_step_index}: {text}")

    def event(self, reason: Reason, message: str) -> None:
        self.events.append(Event(reason, message))

    def route_state(self, state: RouteState, message: str) -> None:
        message = limits.clip(message, limits.CONDITION_MESSAGE)
        self.status = cond.with_route_state(self.status, state, message, self.now, self.observed.generation)

    def condition(self, type_: ConditionType, ok: bool, reason: Reason, message: str) -> None:
        conditions = cond.set_condition(
            self.status.conditions,
            type_,
            ok,
            reason,
            limits.clip(message, limits.CONDITION_MESSAGE),
            self.now,
            self.observed.generation,
        )
        self.update(conditions=conditions)

    def set_weight(self, weight: int, *, even_when_held: bool = False) -> None:
        """Asks for `weight` unless it is already live, or the route is held for another writer (only
        a rollback writes then); the last call in a tick wins."""
        self.update(current_weight=weight)
        self.may_write = even_when_held or not self.paused_by(PauseReason.ROUTE_CONFLICT)
        if not self.may_write:
            self.weight = None
            return
        route = self.observed.route
        live = (
            isinstance(route, LiveRoute)
            and route.differing is None
            and (route.incumbent_weight, route.candidate_weight) == (100 - weight, weight)
        )
        self.weight = None if live else weight

    @property
    def weights_live(self) -> bool:
        route = self.observed.route
        wanted = self.status.current_weight
        return (
            isinstance(route, LiveRoute)
            and route.differing is None
            and self.weight is None
            and route.candidate_weight == wanted
            and route.mirror_percent == mirror_wanted(self.spec, self.status)
        )

    @property
    def step(self) -> Step:
        return self.spec.steps[self.status.current_step_index]

    @property
    def at_indefinite_pause(self) -> bool:
        pause = self.step.pause
        return pause is not None and pause.duration is None

    @property
    def current_step_removed(self) -> bool:
        """The spec was edited mid-rollout and no longer has the step the rollout is at."""
        return self.stepping and self.status.current_step_index >= len(self.spec.steps)

    @property
    def stepping(self) -> bool:
        """Active and at a step: not yet in the watch window."""
        return self.status.phase in STEPPING_PHASES and not watching(self.status)

    @property
    def error_paused(self) -> bool:
        return self.paused_by(PauseReason.PROMETHEUS_ERRORS)

    def paused_by(self, *reasons: PauseReason) -> bool:
        pause = self.status.pause
        return pause is not None and pause.reason in reasons

    def pause(self, reason: PauseReason, message: str, without_events: tuple[str, ...] = ()) -> None:
        """Holds the rollout for `reason`; a route conflict stays the pause until it is released (it
        keeps the route from being written)."""
        if self.paused_by(PauseReason.ROUTE_CONFLICT) and reason is not PauseReason.ROUTE_CONFLICT:
            return
        if self.paused_by(reason):
            return  # the same pause goes on since it began
        clipped = limits.clip(message, limits.ANALYSIS_MESSAGE)
        pause = RolloutPause(
            reason=reason, since=self.now, message=clipped, metrics_without_events=without_events
        )
        self.update(pause=pause)

    def unpause(self, *reasons: PauseReason) -> None:
        """Ends the pause if it is for one of `reasons`."""
        if self.paused_by(*reasons):
            self.update(pause=None)

    def end_pauses(self) -> None:
        """The rollout ended: only a route held for another writer stays held."""
        self.unpause(*(reason for reason in PauseReason if reason is not PauseReason.ROUTE_CONFLICT))
