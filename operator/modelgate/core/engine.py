"""One tick of a rollout: observations in, actions and the next status out.

Weights move only as the steps say, or to 0 on rollback; a step advances only on a passing analysis
taken at least one interval into the step; a rollback is final until `retry` or a new candidate.
The rules of each feature live in their own modules, below this one; core/policy.py lists them in the
order they are evaluated, and each returns an intent (core/model.py) that this module carries out.
This module reads as the rollout's life: start, pending, gating, steps, the end.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, PauseReason, Phase, RollbackReason, RouteState
from modelgate.core import endings, holds, model
from modelgate.core.actions import as_if_taken
from modelgate.core.endings import decide_unusable
from modelgate.core.holds import (
    CLAIM_RELEASED,
    claim_hold,
    claim_noted,
    deadline_paused,
    overwrite_noted,
    overwrite_noticed,
    overwritten_by,
)
from modelgate.core.judging import check_noted, gate_pending, gate_start, gating, judged
from modelgate.core.manual_commands import handle_command
from modelgate.core.model import (
    AskWeight,
    BeginPause,
    Decision,
    Effect,
    EndPause,
    Fields,
    Hold,
    LiveRoute,
    Observations,
    Outcome,
    RouteProblem,
    Say,
    SetCondition,
    SetRouteState,
    StepNote,
)
from modelgate.core.notifying import note_notifications
from modelgate.core.policy import (
    PENDING,
    PENDING_BOOKKEEPING,
    ROLLED_BACK,
    ROLLED_BACK_BOOKKEEPING,
    STEPPING,
    STEPPING_BOOKKEEPING,
    Rule,
    with_groups,
)
from modelgate.core.reasons import ConditionType, Reason, moment
from modelgate.core.stepping import failures_for_new_step, mirror_noted, next_wakeup, unmet_need
from modelgate.core.tick import Tick, fresh_status, note_history, watching, with_state_from_conditions

# -- engine ----------------------------------------------------------------------------------------


__all__ = ["decide", "decide_unusable"]


def decide(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, now: datetime
) -> Decision:
    status = with_state_from_conditions(status, now)
    observed = with_groups(observed)
    tick = _Tick(endings.in_force(spec, status), status, observed, now)
    tick.run()
    tick.status = note_history(status, tick.status, now)
    tick.status = note_notifications(tick.spec, status, tick.status, tick.outcome, observed, now)
    plan = endings.generated_plan(tick.spec, tick.status, observed, tick.weight)
    tick.weight, tick.generated, tick.keeps_generated = plan.weight, plan.changes, plan.keeps_finalizer
    if plan.message is not None:
        tick.update(message=plan.message)
    if plan.handed_back:
        tick.update(current_weight=0)  # the weight the route is to carry: no write is retried
    # The one wake-up, as if the write takes; `settle` brings it forward when it does not.
    return tick.decision(lambda decided: now + next_wakeup(spec, as_if_taken(decided), now))


class _Tick(Tick):
    def run(self) -> None:
        self.transition()
        noted, rewrite = mirror_noted(self)  # the mirror follows the step the tick ended at
        fold(self, noted)
        if rewrite:
            self.weight = self.status.current_weight

    def transition(self) -> None:
        generation_changed = self.status.observed_generation != self.observed.generation
        if self.status.rollout_candidate != self.spec.candidate.identity:
            self.start_rollout(Reason.NEW_ROLLOUT, f"rolling out {self.spec.candidate.name}")
        elif generation_changed and self.status.phase is Phase.FAILED:
            self.start_rollout(Reason.SPEC_CHANGED, "the spec changed; starting again from step 0")
        elif self.current_step_removed:
            # Like Argo Rollouts when the steps change: start over rather than guess where to go on.
            removed = self.status.current_step_index
            self.start_rollout(
                Reason.SPEC_CHANGED, f"step {removed} was removed from the spec; starting again from step 0"
            )
        self.update(observed_generation=self.observed.generation)
        fold(self, check_noted(self))
        command = self.observed.command
        handled = self.status.last_command
        if command is not None and (handled is None or command.id != handled.id):
            intent, noted = handle_command(self, command)
            fold(self, noted)
            self.apply(intent)
        route = self.observed.route
        if isinstance(route, RouteProblem):
            if self.status.phase is not Phase.FAILED:  # Failed said why; its 0 waits for the route
                self.route_problem(route)
            return
        writer = overwritten_by(self, route)  # before note_route records what the route carries now
        self.note_route(route)
        held = claim_hold(self.spec, self.status, self.observed, route)
        if held is not None:
            fold(self, claim_noted(self, held))
            self.weight, self.may_write = None, False
            return
        fold(self, CLAIM_RELEASED)
        if writer is not None:
            fold(self, overwrite_noted(self, route, writer))
        phase = self.status.phase
        problem = self.observed.query_problem
        if problem is not None and phase is Phase.PENDING:
            # Before any traffic, a query that cannot be built fails the rollout at weight 0; once
            # the candidate has traffic it is an analysis error, held or rolled back by policy.
            self.event(Reason.INVALID_SPEC, problem.message)
            self.fail(Reason.INVALID_SPEC, problem.message)
        elif phase is Phase.SUCCEEDED:
            self.apply(model.SetWeight(100))
        elif phase is Phase.FAILED:
            self.apply(model.SetWeight(0))  # Failed never strands traffic: the incumbent takes it all
        elif phase is Phase.ROLLED_BACK:
            # A gradual rollback is watched: its run judged (none is, once it has reached 0)
            self.analysed = None if self.status.rolling_back is None else judged(self)
            self.apply(self.first_intent(ROLLED_BACK_BOOKKEEPING, ROLLED_BACK))
        elif phase is Phase.PENDING:
            self.apply(self.first_intent(PENDING_BOOKKEEPING, PENDING))
        elif phase is Phase.GATING:
            intent, noted = gating(self)
            fold(self, noted)
            self.apply(intent)
        else:
            self.analysed = judged(self)
            self.apply(self.first_intent(STEPPING_BOOKKEEPING, STEPPING))

    def note_route(self, route: LiveRoute) -> None:
        """RouteReady, and the weight the route carries; a write that has not taken (reported when
        it was made) stays reported until the route carries the weight."""
        self.update(live_weight=route.candidate_weight, live_mirror_percent=route.mirror_percent)
        not_taken = self.status.route_state is RouteState.WEIGHT_NOT_APPLIED
        live = (route.candidate_weight, route.mirror_percent)
        asked = (self.status.current_weight, self.status.current_mirror_percent)
        still_not_taken = not_taken and (route.differing is not None or live != asked)
        if not still_not_taken and not overwrite_noticed(self):
            self.route_state(RouteState.FOUND, "the route and both backends exist")

    def start_rollout(self, reason: Reason, message: str) -> None:
        self.status = fresh_status(self.status, self.spec.candidate.identity, self.now, message)
        self.event(reason, message)

    def first_intent(self, bookkeeping: tuple[Rule, ...], rules: tuple[Rule, ...]) -> model.Intent:
        """Records what the bookkeeping saw, then asks the rules in order: the first intent decides;
        what a rule noted on the way is recorded before the next is asked."""
        for rule in (*bookkeeping, *rules):
            match rule(self):
                case model.Noted(effects=effects):
                    fold(self, effects)
                case None:
                    pass
                case intent:
                    return intent
        return None

    def apply(self, intent: model.Intent) -> None:
        """Carries out the intent the policy (core/policy.py) decided on."""
        match intent:
            case model.Hold() as hold:
                fold_hold(self, hold)
            case model.RollBack(reason=reason, cause=cause):
                self.rollback(reason, cause)
            case model.Fail(reason=reason, message=message, event=event):
                if event is not None:
                    self.events.append(event)
                self.fail(reason, message)
            case model.RaiseWeight(index=index, weight=weight):
                self.set_weight(weight)
                self.update(step_started_at=self.now, inconclusive_since=None)
                self.update(message=f"step {index}: candidate weight {weight}")
                self.event(Reason.WEIGHT_SET, f"step {index}: candidate weight {weight}%")
                self.advance_while_complete()  # the step's clock starts when its weight does
            case model.SetWeight(weight=weight):
                self.set_weight(weight)
            case model.EnterStep(index=index, through_complete=through):
                self.enter_step(index)
                if through:
                    self.advance_while_complete()
            case model.Succeed():
                self.succeed()
            case model.StartOver(reason=reason, message=message):
                self.start_rollout(reason, message)
            case model.Advance():
                self.advance()

    def advance(self) -> None:
        if self.status.phase is Phase.PENDING:
            self.leave_pending()
        elif watching(self.status):  # the window has passed
            self.succeed()
            self.scale_down_incumbent = endings.scales_down_incumbent(self.spec)
        else:
            self.advance_while_complete()

    def leave_pending(self) -> None:
        if gate_pending(self):
            fold(self, gate_start(self))
            return
        self.update(phase=Phase.PROGRESSING, pending_since=None)
        self.event(Reason.ROLLOUT_STARTED, f"candidate {self.spec.candidate.name} is Available")
        self.apply(model.EnterStep(0))

    def advance_while_complete(self) -> None:
        while self.stepping:
            unmet = unmet_need(self)
            if unmet is not None:
                if unmet.note is not None:
                    self.note(unmet.note)  # what the step waits for
                return
            self.event(Reason.STEP_COMPLETED, f"step {self.status.current_step_index} completed")
            self.enter_step(self.status.current_step_index + 1)

    def enter_step(self, index: int) -> None:
        self.unpause(PauseReason.INDEFINITE_STEP)
        if index >= len(self.spec.steps):
            opening = endings.opening(self)
            if opening is None:
                self.succeed()
            else:
                fold(self, opening)
            return
        self.update(
            current_step_index=index,
            step_started_at=self.now,
            inconclusive_since=None,
            analysis=failures_for_new_step(self.spec, self.status),
        )
        if deadline_paused(self):
            self.condition(ConditionType.ANALYSIS_HEALTHY, False, Reason.RESUMED, f"step {index} started")
            self.unpause(PauseReason.PENDING_DEADLINE, PauseReason.INCONCLUSIVE_DEADLINE)
        step = self.step
        if step.set_weight is not None:
            fold(self, holds.weight_check(self, step.set_weight))
            if holds.short(self, step.set_weight):
                return
        if step.set_weight is not None:
            self.set_weight(step.set_weight)
            self.update(phase=Phase.PROGRESSING, message=f"step {index}: candidate weight {step.set_weight}")
            self.event(Reason.WEIGHT_SET, f"step {index}: candidate weight {step.set_weight}%")
        elif step.mirror is not None:
            # The weight stays; the mirror is written at the end of the tick (mirror_noted).
            message = f"step {index}: mirroring {step.mirror.percent}% for {step.mirror.duration}"
            self.update(phase=Phase.PROGRESSING, message=message)
        elif step.pause is not None and step.pause.duration is None:
            self.update(phase=Phase.PAUSED, message=f"step {index}: paused until `modelgate promote`")
            self.pause(PauseReason.INDEFINITE_STEP, f"step {index} pauses until `modelgate promote`")
            self.event(Reason.PAUSED, f"step {index}: waiting for `modelgate promote`")
        else:
            assert step.pause is not None
            self.update(phase=Phase.PROGRESSING, message=f"step {index}: pausing for {step.pause.duration}")

    def succeed(self) -> None:
        self.set_weight(100)
        self.update(
            phase=Phase.SUCCEEDED,
            current_step_index=len(self.spec.steps),
            step_started_at=self.now,
            message=f"{self.spec.candidate.name} takes all traffic",
        )
        self.end_pauses()
        fold(self, endings.closing(self, Reason.WATCH_PASSED, "the watch window passed without a breach"))
        self.condition(ConditionType.COMPLETED, True, Reason.SUCCEEDED, "every step completed")
        self.event(Reason.ROLLOUT_SUCCEEDED, f"{self.spec.candidate.name} promoted to 100%")
        self.outcome = Outcome(Phase.SUCCEEDED, Reason.ROLLOUT_SUCCEEDED)

    def rollback(self, reason: RollbackReason, cause: Reason) -> None:
        if cause is not Reason.ABORTED:
            held, noted = endings.held_rollback(self, reason)
            fold(self, noted)
            if held:
                return
        fold(self, endings.closing(self, Reason.ROLLED_BACK, reason.message))
        rolling = endings.gradual_start(self.spec, self.status, cause, self.now)
        message = f"rolled back: {reason.message}"
        if rolling is None:
            self.set_weight(0, even_when_held=True)
        else:
            message = endings.step_down_message(rolling.from_weight, rolling, reason.message)
        self.update(phase=Phase.ROLLED_BACK, rollback_reason=reason, rolling_back=rolling, message=message)
        self.end_pauses()
        self.condition(ConditionType.COMPLETED, False, Reason.ROLLED_BACK, reason.message)
        step_down = (
            "" if rolling is None else f" (the candidate's weight reaches 0 at {moment(rolling.ends_at)})"
        )
        self.event(Reason.ROLLED_BACK, f"{cause}: {reason.message}{step_down}")
        self.outcome = Outcome(Phase.ROLLED_BACK, cause)

    def fail(self, reason: Reason, message: str) -> None:
        """The rollout cannot go on: Failed, and the candidate's weight 0 (written even over another
        writer's, as a rollback is), asked again at every tick until the route carries it."""
        self.set_weight(0, even_when_held=True)
        self.update(phase=Phase.FAILED, message=message)
        self.end_pauses()
        self.outcome = Outcome(Phase.FAILED, reason)

    def route_problem(self, problem: RouteProblem) -> None:
        """An active rollout cannot go on and ends Failed, its weight 0 written once the route can be
        read again; a finished one keeps its phase."""
        state = RouteState(problem.reason.value)
        if self.status.route_state is not state:
            self.event(problem.reason, problem.message)
        self.route_state(state, problem.message)
        if self.status.phase not in (Phase.SUCCEEDED, Phase.ROLLED_BACK):
            self.fail(problem.reason, problem.message)
        self.weight = None  # nothing can be written to a route that cannot be read


# -- fold ------------------------------------------------------------------------------------------
# Where what the rules say becomes the tick's status, pause, phase, conditions and Events: the effects a rule
# or a bookkeeping step returned (core/model.py), and the pause a Hold begins. The engine (core/engine.py)
# folds them; the rules only return them.


def fold(tick: Tick, effects: Iterable[Effect]) -> None:
    for effect in _merged(effects):
        match effect:
            case Fields(values=values):
                tick.update(**values)
            case Say(reason=reason, message=message):
                tick.event(reason, message)
            case SetCondition(type=type_, ok=ok, reason=reason, message=message):
                tick.condition(type_, ok, reason, message)
            case BeginPause(reason=reason, message=message):
                tick.pause(reason, message)
            case EndPause(reasons=reasons):
                tick.unpause(*reasons)
            case SetRouteState(state=state, message=message):
                tick.route_state(state, message)
            case AskWeight(weight=weight, even_when_held=even_when_held):
                tick.set_weight(weight, even_when_held=even_when_held)
            case StepNote(text=text):
                tick.note(text)


def _merged(effects: Iterable[Effect]) -> Iterator[Effect]:
    """The effects, with consecutive Fields as one (the later value of a field wins, as it would
    written one after the other): one status copy instead of several."""
    values: dict[str, object] = {}
    for effect in effects:
        if isinstance(effect, Fields):
            values.update(effect.values)
            continue
        if values:
            yield Fields(values)
            values = {}
        yield effect
    if values:
        yield Fields(values)


def fold_hold(tick: Tick, hold: Hold) -> None:
    """A pause the hold begins or goes on with (its `cause`: status.pause, phase Paused unless
    Pending, condition AnalysisHealthy, the Event), and the hold's message."""
    if hold.cause is not None and hold.pause is not None:
        if hold.event is not None:
            tick.events.append(hold.event)
        tick.condition(ConditionType.ANALYSIS_HEALTHY, False, hold.cause, hold.detail)
        tick.pause(hold.pause, hold.detail, hold.without_events)
        if tick.status.phase is not Phase.PENDING:
            tick.update(phase=Phase.PAUSED)
    if hold.message is not None:
        tick.update(message=hold.message)
