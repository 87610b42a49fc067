"""The accumulator of one tick, and what it reads and keeps: where the rollout is (pure predicates
on spec and status), the status a rollout starts from or an older operator wrote, and the history
a tick adds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from modelgate.api import (
    ConditionStatus,
    EarlierRollout,
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RolloutPause,
    RouteState,
    Step,
)
from modelgate.api.history import MAX_WEIGHT_CHANGES, WeightChange
from modelgate.api.status import MAX_EARLIER_ROLLOUTS
from modelgate.core import reasons
from modelgate.core.actions import TickEffects, tick_actions
from modelgate.core.metric_verdicts import Evaluation
from modelgate.core.model import (
    ChangeGenerated,
    Decision,
    Event,
    LiveRoute,
    Observations,
    Outcome,
    ScaleDownIncumbent,
)
from modelgate.core.reasons import ConditionType, Reason

# -- tick ------------------------------------------------------------------------------------------
# The accumulator of one tick: the status being decided, the weight to write, the Events and the outcome, with
# the small state changes (update, note, event, condition, pause, set a weight) that the engine
# (core/engine.py) and its fold (core/engine.py) make. The feature rules read it (spec, status, observations,
# now) and return intents and effects (core/model.py); they never write it.


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
        # A one-edit rollout's changes to what is generated, and whether they keep the finalizer.
        self.generated: tuple[ChangeGenerated | ScaleDownIncumbent, ...] = ()
        self.keeps_generated = False
        self.analysed: Evaluation | None = None  # this tick's analysis run, judged before the policy

    def decision(self, wake_at: Callable[[Decision], datetime]) -> Decision:
        """The tick's decision: its status, its actions (built once, here), and `wake_at` of it."""
        effects = TickEffects(
            self.weight,
            tuple(self.events),
            self.outcome,
            self.scale_down_incumbent,
            self.generated,
            self.keeps_generated,
        )
        actions = tick_actions(self.spec, self.before, self.observed, self.status, effects)
        decided = Decision(self.status, actions)
        return replace(decided, wake_at=wake_at(decided))

    def update(self, **fields: object) -> None:
        # model_copy does not validate, so the message is kept within the schema's length here.
        if isinstance(message := fields.get("message"), str):
            fields["message"] = reasons.clip(message, reasons.STATUS_MESSAGE)
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
        message = reasons.clip(message, reasons.CONDITION_MESSAGE)
        self.status = reasons.with_route_state(
            self.status, state, message, self.now, self.observed.generation
        )

    def condition(self, type_: ConditionType, ok: bool, reason: Reason, message: str) -> None:
        conditions = reasons.set_condition(
            self.status.conditions,
            type_,
            ok,
            reason,
            reasons.clip(message, reasons.CONDITION_MESSAGE),
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
        clipped = reasons.clip(message, reasons.ANALYSIS_MESSAGE)
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


# -- stage -----------------------------------------------------------------------------------------
# Where a rollout is, read from its spec and status alone: pure predicates the tick and the feature rules
# share (the bottom of core's layers, so that any of them may ask).


STEPPING_PHASES = (Phase.PROGRESSING, Phase.PAUSED)


def watching(status: ModelRolloutStatus) -> bool:
    """In the watch window (spec.watch): every step done, the analysis goes on."""
    return status.watch_ends_at is not None and status.phase in STEPPING_PHASES


def mirror_wanted(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> int:
    """The percentage of requests to copy to the candidate: the current step's while an active rollout
    is at a mirror step, else 0 (any other step, Pending, and every end: a rollback mirrors nothing)."""
    if status.phase not in STEPPING_PHASES or status.current_step_index >= len(spec.steps):
        return 0
    mirror = spec.steps[status.current_step_index].mirror
    return 0 if mirror is None else mirror.percent


def candidate_served(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> bool:
    """The candidate gets requests, its own share or copies, so its metrics have something to judge."""
    return status.current_weight > 0 or mirror_wanted(spec, status) > 0


# -- tick_history ----------------------------------------------------------------------------------
# What a tick adds to the rollout's history (status.stepStarts, status.weightChanges), read from the status
# before and after the tick: every step entered and every weight asked for, at the tick's time, in seconds
# after the rollout started.


def note_history(before: ModelRolloutStatus, after: ModelRolloutStatus, now: datetime) -> ModelRolloutStatus:
    """`after` with this tick's step starts and weight change appended. A rollout starts at weight
    0, so its first change is its first weight above 0."""
    started = after.rollout_started_at
    if started is None:
        return after
    offset = round(max(0.0, (now - started).total_seconds()), 3)
    starts = (*after.step_starts, *_steps_entered(before, after, now, offset))
    changes = after.weight_changes
    if after.current_weight != (changes[-1].weight if changes else 0):
        changes = (*changes, WeightChange(weight=after.current_weight, seconds=offset))[-MAX_WEIGHT_CHANGES:]
    if len(starts) == len(after.step_starts) and changes is after.weight_changes:
        return after
    return after.model_copy(update={"step_starts": starts, "weight_changes": changes})


def _steps_entered(
    before: ModelRolloutStatus, after: ModelRolloutStatus, now: datetime, offset: float
) -> tuple[float, ...]:
    """The start of each step entered this tick, index by index: from the one after the step the
    rollout was at (the first, for a rollout that had not entered one) to the one it is at now.
    Nothing when the record does not end where they begin: the end of the last step entered again
    (after a watch window), or a rollout begun before this record, whose earlier steps it lacks."""
    if after.step_started_at != now or before.step_started_at == now:
        return ()
    same_rollout = before.rollout_started_at == after.rollout_started_at
    first = before.current_step_index + 1 if same_rollout and before.step_started_at is not None else 0
    if first != len(after.step_starts):
        return ()
    return (offset,) * (after.current_step_index + 1 - first)


# -- fresh_status ----------------------------------------------------------------------------------
# The status a rollout starts from (a new candidate, a spec edit, `modelgate retry`): the model's defaults,
# but for what is the object's rather than the rollout's, listed in KEPT. A field added to the status is so
# reset by a new rollout without anyone having to remember it.


KEPT = frozenset(
    {
        "earlier_rollouts",  # the history, with the rollout being replaced added
        "last_command",  # a command's id, so that one handled before is never applied again
        "analysis_check",  # whether the queries answer: of the analysis, not of the rollout
        "current_mirror_percent",  # what the route was asked to copy: the tick removes it, saying so
        "observed_generation",  # the spec the status was computed from: the tick sets it
        "notifications",  # transitions not yet delivered, and the count that keeps their keys unique
        "policy",  # the policy pinned for this candidate, before the tick (policy_plans.py)
    }
)


def fresh_status(
    status: ModelRolloutStatus, candidate: str, now: datetime, message: str
) -> ModelRolloutStatus:
    kept = {name: getattr(status, name) for name in KEPT}
    started = ModelRolloutStatus(
        phase=Phase.PENDING,
        message=reasons.clip(message, reasons.STATUS_MESSAGE),
        rollout_candidate=candidate,
        rollout_started_at=now,
        pending_since=now,
    )
    return started.model_copy(update=kept | {"earlier_rollouts": _earlier_rollouts(status)})


def _earlier_rollouts(status: ModelRolloutStatus) -> tuple[EarlierRollout, ...]:
    """The kept history with the rollout being replaced, if there was one."""
    kept = status.earlier_rollouts
    if status.rollout_candidate is None:
        return kept
    ended = EarlierRollout(
        candidate=status.rollout_candidate, started_at=status.rollout_started_at, phase=status.phase
    )
    return (*kept, ended)[-MAX_EARLIER_ROLLOUTS:]


# -- status_upgrade --------------------------------------------------------------------------------
# A status written by an operator before status.pause, capacityWaitSince, routeState and candidateAvailable,
# whose state was known only from conditions: read once, into the typed fields, so that an upgrade does not
# let a paused rollout go on, forget a wait, warn twice of a write that did not take, or answer another writer
# twice. The only place core reads a condition; it goes when no such status can be left (two releases on).


def with_state_from_conditions(status: ModelRolloutStatus, now: datetime) -> ModelRolloutStatus:
    return _with_pause(_with_capacity_wait(_with_route_state(_with_candidate_available(status))), now)


def _with_route_state(status: ModelRolloutStatus) -> ModelRolloutStatus:
    ready = reasons.condition(status.conditions, ConditionType.ROUTE_READY)
    if status.route_state is not None or ready is None or ready.reason not in set(RouteState):
        return status
    return status.model_copy(update={"route_state": RouteState(ready.reason)})


def _with_candidate_available(status: ModelRolloutStatus) -> ModelRolloutStatus:
    available = reasons.condition(status.conditions, ConditionType.CANDIDATE_AVAILABLE)
    if status.candidate_available is not None or available is None:
        return status
    return status.model_copy(update={"candidate_available": available.status is ConditionStatus.TRUE})


def _with_capacity_wait(status: ModelRolloutStatus) -> ModelRolloutStatus:
    capacity = reasons.condition(status.conditions, ConditionType.CANDIDATE_CAPACITY)
    if (
        status.capacity_wait_since is not None
        or capacity is None
        or capacity.status is not ConditionStatus.FALSE
    ):
        return status
    return status.model_copy(update={"capacity_wait_since": capacity.last_transition_time})


def _with_pause(status: ModelRolloutStatus, now: datetime) -> ModelRolloutStatus:
    if status.pause is not None:
        return status
    reason = _older_pause(status)
    if reason is None:
        return status
    pause = RolloutPause(reason=reason, since=now, message=status.message or str(reason))
    return status.model_copy(update={"pause": pause})


def _older_pause(status: ModelRolloutStatus) -> PauseReason | None:
    ready = reasons.condition(status.conditions, ConditionType.ROUTE_READY)
    if ready is not None and ready.reason == Reason.ROUTE_CONFLICT:
        return PauseReason.ROUTE_CONFLICT
    if status.phase not in (Phase.PENDING, Phase.PAUSED):
        return None
    healthy = reasons.condition(status.conditions, ConditionType.ANALYSIS_HEALTHY)
    if healthy is not None and healthy.reason == Reason.PROGRESS_DEADLINE_EXCEEDED:
        pending = status.phase is Phase.PENDING or status.inconclusive_since is None
        return PauseReason.PENDING_DEADLINE if pending else PauseReason.INCONCLUSIVE_DEADLINE
    if status.phase is Phase.PENDING:
        return None
    if healthy is not None and healthy.reason == Reason.PROMETHEUS_UNAVAILABLE:
        return PauseReason.PROMETHEUS_ERRORS
    if status.rollback_reason is not None:
        return PauseReason.ROLLBACK_HELD
    return PauseReason.INDEFINITE_STEP
