"""One tick of a rollout: observations in, actions and the next status out.

Weights move only as the steps say, or to 0 on rollback; a step advances only on a passing analysis
taken at least one interval into the step; a rollback is final until `retry` or a new candidate.
"""

from __future__ import annotations

from datetime import datetime

from modelgate.api import (
    ModelRolloutSpec,
    ModelRolloutStatus,
    Phase,
    RollbackReason,
    Step,
    Verdict,
)
from modelgate.core import conditions as cond
from modelgate.core import limits
from modelgate.core.analysis import evaluate
from modelgate.core.model import (
    Action,
    CommandAction,
    Decision,
    EventType,
    LiveRoute,
    Observations,
    RecordEvent,
    RouteProblem,
    SetWeight,
)
from modelgate.core.schedule import pause_ends_at, step_settles_at

PROMETHEUS_UNAVAILABLE = "PrometheusUnavailable"


def decide(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, now: datetime
) -> Decision:
    tick = _Tick(spec, status, observed, now)
    tick.run()
    return Decision(tick.status, tuple(tick.actions))


class _Tick:
    def __init__(
        self, spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, now: datetime
    ):
        self.spec = spec
        self.status = status
        self.observed = observed
        self.now = now
        self.actions: list[Action] = []

    # -- small helpers -------------------------------------------------------------------------
    def update(self, **fields: object) -> None:
        # model_copy does not validate, so the message is kept within the schema's length here.
        if isinstance(message := fields.get("message"), str):
            fields["message"] = limits.clip(message, limits.STATUS_MESSAGE)
        self.status = self.status.model_copy(update=fields)

    def note(self, text: str) -> None:
        """What the current step waits for, as the status message."""
        self.update(message=f"step {self.status.current_step_index}: {text}")

    def event(self, type_: EventType, reason: str, message: str) -> None:
        self.actions.append(RecordEvent(type_, reason, message))

    def condition(self, type_: str, ok: bool, reason: str, message: str) -> None:
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

    def set_weight(self, weight: int) -> None:
        """Asks for `weight` unless it is already live; the last call in a tick wins."""
        self.update(current_weight=weight)
        self.actions = [a for a in self.actions if not isinstance(a, SetWeight)]
        route = self.observed.route
        if not isinstance(route, LiveRoute) or (route.incumbent_weight, route.candidate_weight) != (
            100 - weight,
            weight,
        ):
            self.actions.append(SetWeight(weight))

    @property
    def weights_live(self) -> bool:
        route = self.observed.route
        wanted = self.status.current_weight
        written = any(isinstance(a, SetWeight) for a in self.actions)
        return isinstance(route, LiveRoute) and not written and route.candidate_weight == wanted

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
        active = self.status.phase in (Phase.PROGRESSING, Phase.PAUSED)
        return active and self.status.current_step_index >= len(self.spec.steps)

    @property
    def error_paused(self) -> bool:
        healthy = cond.condition(self.status.conditions, cond.ANALYSIS_HEALTHY)
        return (
            self.status.phase is Phase.PAUSED
            and healthy is not None
            and healthy.reason == PROMETHEUS_UNAVAILABLE
        )

    # -- the tick ----------------------------------------------------------------------------------
    def run(self) -> None:
        generation_changed = self.status.observed_generation != self.observed.generation
        if self.status.rollout_candidate != self.spec.candidate.deployment:
            self.start_rollout("NewRollout", f"rolling out {self.spec.candidate.deployment}")
        elif generation_changed and self.status.phase is Phase.FAILED:
            self.start_rollout("SpecChanged", "the spec changed; starting again from step 0")
        elif self.current_step_removed:
            # Like Argo Rollouts when the steps change: start over rather than guess where to go on.
            removed = self.status.current_step_index
            self.start_rollout(
                "SpecChanged", f"step {removed} was removed from the spec; starting again from step 0"
            )
        self.update(observed_generation=self.observed.generation)
        if self.observed.command is not None and self.observed.command.id != self.status.last_command_id:
            self.update(last_command_id=self.observed.command.id)
            self.handle_command(self.observed.command.action)
        phase = self.status.phase
        if phase is Phase.FAILED:
            return
        if isinstance(self.observed.route, RouteProblem):
            self.route_problem(self.observed.route)
            return
        self.condition(cond.ROUTE_READY, True, "RouteFound", "the route and both backends exist")
        if phase is Phase.SUCCEEDED:
            self.set_weight(100)
        elif phase is Phase.ROLLED_BACK:
            self.set_weight(0)
        elif phase is Phase.PENDING:
            self.pending()
        else:
            self.progress()

    def start_rollout(self, reason: str, message: str) -> None:
        self.update(
            phase=Phase.PENDING,
            message=message,
            rollout_candidate=self.spec.candidate.deployment,
            current_step_index=0,
            current_weight=0,
            step_started_at=None,
            last_analysis_at=None,
            consecutive_prometheus_errors=0,
            analysis=(),
            rollback_reason=None,
            conditions=(),
        )
        self.event(EventType.NORMAL, reason, message)

    def pending(self) -> None:
        self.set_weight(0)
        self.note_candidate_availability()
        if not self.observed.candidate_available:
            self.update(message=f"waiting for the candidate: {self.observed.candidate_message}")
            return
        self.update(phase=Phase.PROGRESSING)
        self.event(
            EventType.NORMAL, "RolloutStarted", f"candidate {self.spec.candidate.deployment} is Available"
        )
        self.enter_step(0)
        self.advance_while_complete()

    def progress(self) -> None:
        ran = self.observed.analysis is not None and self.spec.analysis is not None
        if ran and not self.analyse():
            return
        self.set_weight(self.status.current_weight)  # re-assert what this step wrote if it drifted
        self.note_candidate_availability()
        if self.error_paused:
            return
        self.advance_while_complete()

    def note_candidate_availability(self) -> None:
        available = self.observed.candidate_available
        self.condition(
            cond.CANDIDATE_AVAILABLE,
            available,
            "Available" if available else "NotAvailable",
            self.observed.candidate_message,
        )

    def analyse(self) -> bool:
        """Records the run; returns False when it ended the rollout."""
        assert self.spec.analysis is not None and self.observed.analysis is not None
        run = self.observed.analysis
        result = evaluate(self.spec.analysis, run, self.status.analysis)
        self.update(analysis=result.metrics, last_analysis_at=run.at)
        if result.breach is not None:
            self.rollback(result.breach, "MetricBreach")
            return False
        if not result.any_error:
            self.update(consecutive_prometheus_errors=0)
            verdicts = ", ".join(f"{m.name}={m.verdict}" for m in result.metrics)
            if self.error_paused:
                # A pause on errors lasts until `modelgate resume`, even once Prometheus answers again.
                message = f"Prometheus answers again ({verdicts}); paused until `modelgate resume`"
                self.condition(cond.ANALYSIS_HEALTHY, False, PROMETHEUS_UNAVAILABLE, message)
                self.update(message=f"paused: {message}")
                return True
            passing = result.all_pass
            self.condition(cond.ANALYSIS_HEALTHY, passing, "Passing" if passing else "Inconclusive", verdicts)
            return True
        errors = self.status.consecutive_prometheus_errors + 1
        self.update(consecutive_prometheus_errors=errors)
        first_error = next(m for m in result.metrics if m.verdict is Verdict.ERROR)
        detail = f"metric queries failed {errors} time(s) in a row: {first_error.message}"
        limit = self.spec.rollback.max_consecutive_errors
        if errors < limit and not self.error_paused:
            self.condition(cond.ANALYSIS_HEALTHY, False, "QueryError", detail)
            return True
        if errors >= limit and self.spec.rollback.on_prometheus_error == "rollback":
            reason = RollbackReason(time=run.at, message=limits.clip(detail, limits.ANALYSIS_MESSAGE))
            self.rollback(reason, PROMETHEUS_UNAVAILABLE)
            return False
        if not self.error_paused:
            self.event(EventType.WARNING, "AnalysisPaused", f"{detail}; paused until `modelgate resume`")
        self.condition(cond.ANALYSIS_HEALTHY, False, PROMETHEUS_UNAVAILABLE, detail)
        self.update(phase=Phase.PAUSED, message=f"paused: {detail}; run `modelgate resume` to continue")
        return True

    def advance_while_complete(self) -> None:
        while self.status.phase in (Phase.PROGRESSING, Phase.PAUSED) and self.step_complete():
            self.event(EventType.NORMAL, "StepCompleted", f"step {self.status.current_step_index} completed")
            self.enter_step(self.status.current_step_index + 1)

    def step_complete(self) -> bool:
        step = self.step
        if not self.weights_live:
            self.note(f"waiting for weight {self.status.current_weight} to be live")
            return False
        if not self.observed.candidate_available:
            # As Flagger halts: no step is finished while the candidate is not Available; its
            # traffic stays as it is, and the metrics decide whether that is a rollback.
            self.note(f"holding: the candidate is not Available ({self.observed.candidate_message})")
            return False
        if step.pause is not None:
            ends_at = pause_ends_at(self.spec, self.status)
            if ends_at is None:
                return False  # indefinite: until `modelgate promote`
            if self.now < ends_at:
                self.note(f"paused until {ends_at.isoformat()}")
                return False
        return self.analysis_passed()

    def analysis_passed(self) -> bool:
        """A passing run of every metric, taken at least one interval after the step started."""
        analysis = self.spec.analysis
        if analysis is None or self.status.current_weight == 0:
            return True
        settled = step_settles_at(self.spec, self.status)
        assert settled is not None
        latest = {m.name: m for m in self.status.analysis}
        for metric in analysis.metrics:
            record = latest.get(metric.name)
            if record is None or record.time < settled or record.verdict is not Verdict.PASS:
                state = "no analysis yet" if record is None or record.time < settled else record.message
                self.note(f"waiting for {metric.name} to pass ({state})")
                return False
        return True

    def enter_step(self, index: int) -> None:
        if index >= len(self.spec.steps):
            self.succeed()
            return
        self.update(current_step_index=index, step_started_at=self.now)
        step = self.step
        if step.set_weight is not None:
            self.set_weight(step.set_weight)
            self.update(phase=Phase.PROGRESSING, message=f"step {index}: candidate weight {step.set_weight}")
            self.event(EventType.NORMAL, "WeightSet", f"step {index}: candidate weight {step.set_weight}%")
        elif step.pause is not None and step.pause.duration is None:
            self.update(phase=Phase.PAUSED, message=f"step {index}: paused until `modelgate promote`")
            self.event(EventType.NORMAL, "Paused", f"step {index}: waiting for `modelgate promote`")
        else:
            assert step.pause is not None
            self.update(phase=Phase.PROGRESSING, message=f"step {index}: pausing for {step.pause.duration}")

    def succeed(self) -> None:
        self.set_weight(100)
        self.update(
            phase=Phase.SUCCEEDED,
            current_step_index=len(self.spec.steps),
            step_started_at=self.now,
            message=f"{self.spec.candidate.deployment} takes all traffic",
        )
        self.condition(cond.COMPLETED, True, "Succeeded", "every step completed")
        self.event(EventType.NORMAL, "RolloutSucceeded", f"{self.spec.candidate.deployment} promoted to 100%")

    def rollback(self, reason: RollbackReason, condition_reason: str) -> None:
        self.set_weight(0)
        self.update(phase=Phase.ROLLED_BACK, rollback_reason=reason, message=f"rolled back: {reason.message}")
        self.condition(cond.COMPLETED, False, "RolledBack", reason.message)
        self.event(EventType.WARNING, "RolledBack", f"{condition_reason}: {reason.message}")

    def route_problem(self, problem: RouteProblem) -> None:
        """An active rollout cannot go on and ends Failed; a finished one keeps its phase."""
        self.actions = [a for a in self.actions if not isinstance(a, SetWeight)]
        previous = cond.condition(self.status.conditions, cond.ROUTE_READY)
        if previous is None or previous.reason != problem.reason:
            self.event(EventType.WARNING, problem.reason, problem.message)
        self.condition(cond.ROUTE_READY, False, problem.reason, problem.message)
        if self.status.phase not in (Phase.SUCCEEDED, Phase.ROLLED_BACK):
            self.update(phase=Phase.FAILED, message=problem.message)

    # -- manual commands ---------------------------------------------------------------------------
    def handle_command(self, action: CommandAction) -> None:
        phase = self.status.phase
        active = phase in (Phase.PROGRESSING, Phase.PAUSED)
        if action is CommandAction.ABORT and (active or phase in (Phase.PENDING, Phase.FAILED)):
            self.rollback(RollbackReason(time=self.now, message="aborted by `modelgate abort`"), "Aborted")
        elif action is CommandAction.RETRY and phase in (Phase.ROLLED_BACK, Phase.FAILED):
            self.start_rollout("Retry", f"retrying {self.spec.candidate.deployment} from step 0")
        elif action is CommandAction.RESUME and self.error_paused:
            # Back to what the step itself does: an indefinite pause still waits for `modelgate promote`.
            self.update(
                phase=Phase.PAUSED if self.at_indefinite_pause else Phase.PROGRESSING,
                consecutive_prometheus_errors=0,
            )
            if self.at_indefinite_pause:
                self.note("paused until `modelgate promote`")
            self.condition(cond.ANALYSIS_HEALTHY, False, "Resumed", "resumed by `modelgate resume`")
            self.event(EventType.NORMAL, "Resumed", "resumed by `modelgate resume`")
        elif action is CommandAction.PROMOTE_FULL and active:
            self.event(
                EventType.NORMAL, "Promoted", "`modelgate promote --full`: skipping the remaining steps"
            )
            self.succeed()
        elif action is CommandAction.PROMOTE and active and not self.error_paused:
            index = self.status.current_step_index
            self.event(EventType.NORMAL, "Promoted", f"`modelgate promote`: step {index} finished by hand")
            self.enter_step(index + 1)
        else:
            self.event(
                EventType.WARNING, "CommandIgnored", f"`modelgate {action}` does not apply in phase {phase}"
            )
