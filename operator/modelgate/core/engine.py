"""One tick of a rollout: observations in, actions and the next status out.

Weights move only as the steps say, or to 0 on rollback; a step advances only on a passing analysis
taken at least one interval into the step; a rollback is final until `retry` or a new candidate.
The rules of each feature live in their own modules, below this one; core/policy.py lists them in the
order they are evaluated, and each returns an intent (core/intents.py) that this module carries out.
This module reads as the rollout's life: start, pending, gating, steps, the end.
"""

from __future__ import annotations

from datetime import datetime

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, PauseReason, Phase, RollbackReason, RouteState
from modelgate.core import capacity, gradual, intents, watch_window
from modelgate.core.analysis_run import judged
from modelgate.core.conflicts import overwrite_noted, overwrite_noticed, overwritten_by
from modelgate.core.deadlines import deadline_paused
from modelgate.core.fold import fold, fold_hold
from modelgate.core.fresh_status import fresh_status
from modelgate.core.gating import gate_pending, gate_start, gating
from modelgate.core.manual_commands import handle_command
from modelgate.core.mirror import mirror_noted
from modelgate.core.model import Decision, LiveRoute, Observations, Outcome, RouteProblem
from modelgate.core.moments import moment
from modelgate.core.notifying import note_notifications
from modelgate.core.policy import (
    PENDING,
    PENDING_BOOKKEEPING,
    ROLLED_BACK,
    ROLLED_BACK_BOOKKEEPING,
    STEPPING,
    STEPPING_BOOKKEEPING,
    Rule,
)
from modelgate.core.query_check import check_noted
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.route_claims import CLAIM_RELEASED, claim_hold, claim_noted
from modelgate.core.schedule import next_wakeup
from modelgate.core.stage import watching
from modelgate.core.status_upgrade import with_state_from_conditions
from modelgate.core.step_completion import failures_for_new_step, unmet_need
from modelgate.core.tick import Tick
from modelgate.core.tick_history import note_history
from modelgate.core.unusable import decide_unusable
from modelgate.core.writes import as_if_taken

__all__ = ["decide", "decide_unusable"]


def decide(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, now: datetime
) -> Decision:
    status = with_state_from_conditions(status, now)
    tick = _Tick(watch_window.in_force(spec, status), status, observed, now)
    tick.run()
    tick.status = note_history(status, tick.status, now)
    tick.status = note_notifications(tick.spec, status, tick.status, tick.outcome, observed, now)
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
            self.apply(intents.SetWeight(100))
        elif phase is Phase.FAILED:
            self.apply(intents.SetWeight(0))  # Failed never strands traffic: the incumbent takes it all
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

    def first_intent(self, bookkeeping: tuple[Rule, ...], rules: tuple[Rule, ...]) -> intents.Intent:
        """Records what the bookkeeping saw, then asks the rules in order: the first intent decides;
        what a rule noted on the way is recorded before the next is asked."""
        for rule in (*bookkeeping, *rules):
            match rule(self):
                case intents.Noted(effects=effects):
                    fold(self, effects)
                case None:
                    pass
                case intent:
                    return intent
        return None

    def apply(self, intent: intents.Intent) -> None:
        """Carries out the intent the policy (core/policy.py) decided on."""
        match intent:
            case intents.Hold() as hold:
                fold_hold(self, hold)
            case intents.RollBack(reason=reason, cause=cause):
                self.rollback(reason, cause)
            case intents.Fail(reason=reason, message=message, event=event):
                if event is not None:
                    self.events.append(event)
                self.fail(reason, message)
            case intents.RaiseWeight(index=index, weight=weight):
                self.set_weight(weight)
                self.update(step_started_at=self.now, inconclusive_since=None)
                self.update(message=f"step {index}: candidate weight {weight}")
                self.event(Reason.WEIGHT_SET, f"step {index}: candidate weight {weight}%")
                self.advance_while_complete()  # the step's clock starts when its weight does
            case intents.SetWeight(weight=weight):
                self.set_weight(weight)
            case intents.EnterStep(index=index, through_complete=through):
                self.enter_step(index)
                if through:
                    self.advance_while_complete()
            case intents.Succeed():
                self.succeed()
            case intents.StartOver(reason=reason, message=message):
                self.start_rollout(reason, message)
            case intents.Advance():
                self.advance()

    def advance(self) -> None:
        if self.status.phase is Phase.PENDING:
            self.leave_pending()
        elif watching(self.status):  # the window has passed
            self.succeed()
            self.scale_down_incumbent = watch_window.scales_down_incumbent(self.spec)
        else:
            self.advance_while_complete()

    def leave_pending(self) -> None:
        if gate_pending(self):
            fold(self, gate_start(self))
            return
        self.update(phase=Phase.PROGRESSING, pending_since=None)
        self.event(Reason.ROLLOUT_STARTED, f"candidate {self.spec.candidate.name} is Available")
        self.apply(intents.EnterStep(0))

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
            opening = watch_window.opening(self)
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
            fold(self, capacity.weight_check(self, step.set_weight))
            if capacity.short(self, step.set_weight):
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
        fold(
            self, watch_window.closing(self, Reason.WATCH_PASSED, "the watch window passed without a breach")
        )
        self.condition(ConditionType.COMPLETED, True, Reason.SUCCEEDED, "every step completed")
        self.event(Reason.ROLLOUT_SUCCEEDED, f"{self.spec.candidate.name} promoted to 100%")
        self.outcome = Outcome(Phase.SUCCEEDED, Reason.ROLLOUT_SUCCEEDED)

    def rollback(self, reason: RollbackReason, cause: Reason) -> None:
        if cause is not Reason.ABORTED:
            held, noted = watch_window.held_rollback(self, reason)
            fold(self, noted)
            if held:
                return
        fold(self, watch_window.closing(self, Reason.ROLLED_BACK, reason.message))
        rolling = gradual.gradual_start(self.spec, self.status, cause, self.now)
        message = f"rolled back: {reason.message}"
        if rolling is None:
            self.set_weight(0, even_when_held=True)
        else:
            message = gradual.step_down_message(rolling.from_weight, rolling, reason.message)
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
