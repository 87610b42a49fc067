"""One tick of a rollout: observations in, actions and the next status out.

Weights move only as the steps say, or to 0 on rollback; a step advances only on a passing analysis
taken at least one interval into the step; a rollback is final until `retry` or a new candidate.
"""

from __future__ import annotations

from datetime import datetime

from modelgate.api import (
    MetricAnalysis,
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RollbackReason,
    RolloutPause,
    Step,
    Verdict,
)
from modelgate.core import capacity, false_rollback, gradual, limits, watch_window
from modelgate.core import conditions as cond
from modelgate.core.conflicts import note_overwrite, overwrite_noticed, overwritten_by, route_conflict_held
from modelgate.core.deadlines import deadline_paused, inconclusive_deadline, pending_deadline
from modelgate.core.fresh_status import fresh_status
from modelgate.core.gating import gate_pending, gating, start_gate
from modelgate.core.manual_commands import handle_command
from modelgate.core.metric_verdicts import evaluate
from modelgate.core.mirror import candidate_served, mirror_wanted, settle_mirror
from modelgate.core.model import (
    Decision,
    Event,
    LiveRoute,
    Observations,
    Outcome,
    RouteProblem,
    SpecProblem,
)
from modelgate.core.moments import moment
from modelgate.core.pause_upgrade import with_pause_from_conditions
from modelgate.core.query_check import check_holds, note_check
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.schedule import pause_ends_at, step_settles_at


def decide(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, now: datetime
) -> Decision:
    status = with_pause_from_conditions(status, now)
    tick = _Tick(watch_window.in_force(spec, status), status, observed, now)
    tick.run()
    settle_mirror(tick)
    return tick.decision


def decide_unusable(
    problem: SpecProblem, status: ModelRolloutStatus, generation: int, now: datetime
) -> Decision:
    """A spec the operator cannot use, naming the field. An active rollout ends Failed and its
    candidate's traffic goes back to the incumbent (weight 0, asked until the route carries it);
    a finished one (Succeeded, RolledBack) keeps its phase and weight. Said once: the same problem
    again only asks for the weight that is not live yet."""
    message = limits.clip(problem.message, limits.STATUS_MESSAGE)
    finished = status.phase in (Phase.SUCCEEDED, Phase.ROLLED_BACK)
    update: dict[str, object] = {"message": message, "observed_generation": generation}
    if not finished:
        held = status.pause is not None and status.pause.reason is PauseReason.ROUTE_CONFLICT
        update |= {"phase": Phase.FAILED, "current_weight": 0, "pause": status.pause if held else None}
    unusable = status.model_copy(update=update)
    weight = None if finished or status.live_weight == 0 else 0
    if status.message == message and (finished or status.phase is Phase.FAILED):
        return Decision(unusable, weight)
    outcome = None if finished or status.phase is Phase.FAILED else Outcome(Phase.FAILED, Reason.INVALID_SPEC)
    return Decision(unusable, weight, events=(Event(Reason.INVALID_SPEC, problem.message),), outcome=outcome)


class _Tick:
    def __init__(
        self, spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, now: datetime
    ):
        self.spec = spec
        self.status = status
        self.observed = observed
        self.now = now
        self.weight: int | None = None
        self.may_write = False  # whether this tick may write the route (set_weight says)
        self.events: list[Event] = []
        self.outcome: Outcome | None = None
        self.command_handled = False
        self.scale_down_incumbent = False  # set when the watch window passed and spec.watch asks for it

    @property
    def decision(self) -> Decision:
        return Decision(
            self.status,
            self.weight,
            tuple(self.events),
            self.outcome,
            self.command_handled,
            self.status.current_mirror_percent,
            self.scale_down_incumbent,
        )

    # -- small helpers -------------------------------------------------------------------------
    def update(self, **fields: object) -> None:
        # model_copy does not validate, so the message is kept within the schema's length here.
        if isinstance(message := fields.get("message"), str):
            fields["message"] = limits.clip(message, limits.STATUS_MESSAGE)
        self.status = self.status.model_copy(update=fields)

    def note(self, text: str) -> None:
        """What the current step waits for, as the status message."""
        self.update(message=f"step {self.status.current_step_index}: {text}")

    def event(self, reason: Reason, message: str) -> None:
        self.events.append(Event(reason, message))

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
        self.may_write = even_when_held or not route_conflict_held(self)
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
        return self.status.phase in (Phase.PROGRESSING, Phase.PAUSED) and not watch_window.watching(
            self.status
        )

    @property
    def error_paused(self) -> bool:
        return self.paused_by(PauseReason.PROMETHEUS_ERRORS)

    # -- the tick ----------------------------------------------------------------------------------
    def run(self) -> None:
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
        note_check(self)
        command = self.observed.command
        handled = self.status.last_command
        if command is not None and (handled is None or command.id != handled.id):
            handle_command(self, command)
            self.command_handled = True
        route = self.observed.route
        if isinstance(route, RouteProblem):
            if self.status.phase is not Phase.FAILED:  # Failed said why; its 0 waits for the route
                self.route_problem(route)
            return
        writer = overwritten_by(self, route)  # before note_route records what the route carries now
        self.note_route(route)
        if writer is not None:
            note_overwrite(self, route, writer)
        phase = self.status.phase
        problem = self.observed.query_problem
        if problem is not None and phase is Phase.PENDING:
            # Before any traffic, a query that cannot be built fails the rollout at weight 0; once
            # the candidate has traffic it is an analysis error, held or rolled back by policy.
            self.event(Reason.INVALID_SPEC, problem.message)
            self.fail(Reason.INVALID_SPEC, problem.message)
        elif phase is Phase.SUCCEEDED:
            self.set_weight(100)
        elif phase is Phase.FAILED:
            self.set_weight(0)  # Failed never strands traffic: the incumbent takes it all
        elif phase is Phase.ROLLED_BACK:
            gradual.continue_rollback(self)
        elif phase is Phase.PENDING:
            self.pending()
        elif phase is Phase.GATING:
            gating(self)
        else:
            self.progress()

    def note_route(self, route: LiveRoute) -> None:
        """RouteReady, and the weight the route carries; a write that has not taken (reported when
        it was made) stays reported until the route carries the weight."""
        self.update(live_weight=route.candidate_weight, live_mirror_percent=route.mirror_percent)
        ready = cond.condition(self.status.conditions, ConditionType.ROUTE_READY)
        not_taken = ready is not None and ready.reason == Reason.WEIGHT_NOT_APPLIED
        live = (route.candidate_weight, route.mirror_percent)
        asked = (self.status.current_weight, self.status.current_mirror_percent)
        still_not_taken = not_taken and (route.differing is not None or live != asked)
        if not still_not_taken and not overwrite_noticed(self):
            self.condition(
                ConditionType.ROUTE_READY, True, Reason.ROUTE_FOUND, "the route and both backends exist"
            )

    def start_rollout(self, reason: Reason, message: str) -> None:
        self.status = fresh_status(self.status, self.spec.candidate.identity, self.now, message)
        self.event(reason, message)

    # -- pauses (status.pause) ---------------------------------------------------------------------
    def paused_by(self, *reasons: PauseReason) -> bool:
        pause = self.status.pause
        return pause is not None and pause.reason in reasons

    def pause(self, reason: PauseReason, message: str) -> None:
        """Holds the rollout for `reason`; a route conflict stays the pause until it is released (it
        keeps the route from being written)."""
        if self.paused_by(PauseReason.ROUTE_CONFLICT) and reason is not PauseReason.ROUTE_CONFLICT:
            return
        if self.paused_by(reason):
            return  # the same pause goes on since it began
        clipped = limits.clip(message, limits.ANALYSIS_MESSAGE)
        self.update(pause=RolloutPause(reason=reason, since=self.now, message=clipped))

    def unpause(self, *reasons: PauseReason) -> None:
        """Ends the pause if it is for one of `reasons`."""
        if self.paused_by(*reasons):
            self.update(pause=None)

    def end_pauses(self) -> None:
        """The rollout ended: only a route held for another writer stays held."""
        self.unpause(*(reason for reason in PauseReason if reason is not PauseReason.ROUTE_CONFLICT))

    def pending(self) -> None:
        self.set_weight(0)
        self.note_candidate_availability()
        if route_conflict_held(self):
            return
        if deadline_paused(self):
            return  # paused at its deadline: held, with the message saying why, until `modelgate resume`
        if not self.observed.candidate_available:
            self.update(message=f"waiting for the candidate: {self.observed.candidate_message}")
            pending_deadline(self)
            return
        if check_holds(self):
            return  # no weight before every query of the analysis answers
        if gate_pending(self):
            start_gate(self)
            return
        self.update(phase=Phase.PROGRESSING, pending_since=None)
        self.event(Reason.ROLLOUT_STARTED, f"candidate {self.spec.candidate.name} is Available")
        self.enter_step(0)
        self.advance_while_complete()

    def progress(self) -> None:
        ran = self.observed.analysis is not None and self.spec.analysis is not None
        if ran and not self.analyse():
            return
        if route_conflict_held(self):
            return  # the other writer's weight stays; only a rollback writes
        self.set_weight(self.status.current_weight)  # re-assert what this step wrote if it drifted
        self.note_candidate_availability()
        if self.error_paused or deadline_paused(self) or inconclusive_deadline(self) or check_holds(self):
            return
        if watch_window.watching(self.status):
            watch_window.go_on(self)
            return
        if capacity.raise_waiting_weight(self):
            return
        self.advance_while_complete()

    def note_candidate_availability(self) -> None:
        available = self.observed.candidate_available
        self.condition(
            ConditionType.CANDIDATE_AVAILABLE,
            available,
            Reason.AVAILABLE if available else Reason.NOT_AVAILABLE,
            self.observed.candidate_message,
        )

    def analyse(self) -> bool:
        """Records the run; returns False when it ended the rollout."""
        assert self.spec.analysis is not None and self.observed.analysis is not None
        run = self.observed.analysis
        result = evaluate(self.spec.analysis, run, self.status.analysis)
        self.update(analysis=result.metrics, last_analysis_at=run.at)
        if result.breach is not None:
            self.rollback(result.breach, Reason.METRIC_BREACH)
            return False
        for toss in false_rollback.new_warnings(self.spec, self.status, run):
            self.event(Reason.FALSE_ROLLBACK_LIKELY, false_rollback.warning_message(toss))
            warned = false_rollback.remember(self.status.false_rollback_warnings, toss)
            self.update(false_rollback_warnings=warned)
        if not result.any_error:
            self.update(consecutive_prometheus_errors=0)
            verdicts = ", ".join(f"{m.name}={m.verdict}" for m in result.metrics)
            if self.error_paused:
                # A pause on errors lasts until `modelgate resume`, even once the queries succeed again.
                message = f"metric queries succeed again ({verdicts}); paused until `modelgate resume`"
                self.condition(ConditionType.ANALYSIS_HEALTHY, False, Reason.PROMETHEUS_UNAVAILABLE, message)
                self.update(message=f"paused: {message}")
                return True
            self.update(
                inconclusive_since=None
                if result.all_pass or not result.inconclusive
                else self.status.inconclusive_since or run.at
            )
            if deadline_paused(self):
                return True  # held until `modelgate resume`; a breach still rolls back
            passing = result.all_pass
            verdict = Reason.PASSING if passing else Reason.INCONCLUSIVE
            self.condition(ConditionType.ANALYSIS_HEALTHY, passing, verdict, verdicts)
            return True
        errors = self.status.consecutive_prometheus_errors + 1
        self.update(consecutive_prometheus_errors=errors)
        first_error = next(m for m in result.metrics if m.verdict is Verdict.ERROR)
        detail = f"metric queries failed {errors} time(s) in a row: {first_error.message}"
        limit = self.spec.rollback.max_consecutive_errors
        if errors < limit and not self.error_paused:
            self.condition(ConditionType.ANALYSIS_HEALTHY, False, Reason.QUERY_ERROR, detail)
            return True
        if errors >= limit and self.spec.rollback.on_prometheus_error == "rollback":
            reason = RollbackReason(time=run.at, message=limits.clip(detail, limits.ANALYSIS_MESSAGE))
            self.rollback(reason, Reason.PROMETHEUS_UNAVAILABLE)
            return False
        if not self.error_paused:
            self.event(Reason.ANALYSIS_PAUSED, f"{detail}; paused until `modelgate resume`")
        self.condition(ConditionType.ANALYSIS_HEALTHY, False, Reason.PROMETHEUS_UNAVAILABLE, detail)
        self.pause(PauseReason.PROMETHEUS_ERRORS, detail)
        address = self.spec.analysis.prometheus.address
        fix = f"fix what it names (the Prometheus at {address}: spec.analysis.prometheus)"
        self.update(phase=Phase.PAUSED, message=f"paused: {detail}; {fix}, then run `modelgate resume`")
        return True

    def advance_while_complete(self) -> None:
        while self.stepping and self.step_complete():
            self.event(Reason.STEP_COMPLETED, f"step {self.status.current_step_index} completed")
            self.enter_step(self.status.current_step_index + 1)

    def step_complete(self) -> bool:
        step = self.step
        if capacity.step_waits(self):
            return False  # its weight is not raised yet; the message says why
        if not self.weights_live:
            mirror = mirror_wanted(self.spec, self.status)
            copies = f" and a {mirror}% mirror" if mirror else ""
            self.note(f"waiting for weight {self.status.current_weight}{copies} to be live")
            return False
        if not self.observed.candidate_available:
            # As Flagger halts: no step is finished while the candidate is not Available; its
            # traffic stays as it is, and the metrics decide whether that is a rollback.
            self.note(f"holding: the candidate is not Available ({self.observed.candidate_message})")
            return False
        if step.pause is not None or step.mirror is not None:
            ends_at = pause_ends_at(self.spec, self.status)
            if ends_at is None:
                return False  # indefinite: until `modelgate promote`
            if self.now < ends_at:
                self.note(f"{'mirroring' if step.mirror else 'paused'} until {moment(ends_at)}")
                return False
        return self.analysis_passed()

    def analysis_passed(self) -> bool:
        """A passing run of every metric, taken at least one interval after the step started."""
        analysis = self.spec.analysis
        if analysis is None or not candidate_served(self.spec, self.status):
            return True
        settled = step_settles_at(self.spec, self.status)
        assert settled is not None
        latest = {m.name: m for m in self.status.analysis}
        for metric in (m for m in analysis.metrics if not m.dry_run):
            record = latest.get(metric.name)
            if record is None or record.time < settled or record.verdict is not Verdict.PASS:
                state = "no analysis yet" if record is None or record.time < settled else record.message
                self.note(f"waiting for {metric.name} to pass ({state})")
                return False
        return True

    def enter_step(self, index: int) -> None:
        self.unpause(PauseReason.INDEFINITE_STEP)
        if index >= len(self.spec.steps):
            if not watch_window.start(self):
                self.succeed()
            return
        self.update(
            current_step_index=index,
            step_started_at=self.now,
            inconclusive_since=None,
            analysis=self.failures_for_new_step(),
        )
        if deadline_paused(self):
            self.condition(ConditionType.ANALYSIS_HEALTHY, False, Reason.RESUMED, f"step {index} started")
            self.unpause(PauseReason.PENDING_DEADLINE, PauseReason.INCONCLUSIVE_DEADLINE)
        step = self.step
        if step.set_weight is not None and capacity.holds_weight(self, step.set_weight):
            return
        if step.set_weight is not None:
            self.set_weight(step.set_weight)
            self.update(phase=Phase.PROGRESSING, message=f"step {index}: candidate weight {step.set_weight}")
            self.event(Reason.WEIGHT_SET, f"step {index}: candidate weight {step.set_weight}%")
        elif step.mirror is not None:
            # The weight stays; the mirror is written at the end of the tick (settle_mirror).
            message = f"step {index}: mirroring {step.mirror.percent}% for {step.mirror.duration}"
            self.update(phase=Phase.PROGRESSING, message=message)
        elif step.pause is not None and step.pause.duration is None:
            self.update(phase=Phase.PAUSED, message=f"step {index}: paused until `modelgate promote`")
            self.pause(PauseReason.INDEFINITE_STEP, f"step {index} pauses until `modelgate promote`")
            self.event(Reason.PAUSED, f"step {index}: waiting for `modelgate promote`")
        else:
            assert step.pause is not None
            self.update(phase=Phase.PROGRESSING, message=f"step {index}: pausing for {step.pause.duration}")

    def failures_for_new_step(self) -> tuple[MetricAnalysis, ...]:
        """Metrics whose failureLimit counts per step start the step with no failures."""
        per_step = (
            {m.name for m in self.spec.analysis.metrics if m.failure_limit_scope == "step"}
            if (self.spec.analysis)
            else set()
        )
        return tuple(
            m.model_copy(update={"failures": 0}) if m.name in per_step else m for m in self.status.analysis
        )

    def succeed(self) -> None:
        self.set_weight(100)
        self.update(
            phase=Phase.SUCCEEDED,
            current_step_index=len(self.spec.steps),
            step_started_at=self.now,
            message=f"{self.spec.candidate.name} takes all traffic",
        )
        self.end_pauses()
        watch_window.stop(self, Reason.WATCH_PASSED, "the watch window passed without a breach")
        self.condition(ConditionType.COMPLETED, True, Reason.SUCCEEDED, "every step completed")
        self.event(Reason.ROLLOUT_SUCCEEDED, f"{self.spec.candidate.name} promoted to 100%")
        self.outcome = Outcome(Phase.SUCCEEDED, Reason.ROLLOUT_SUCCEEDED)

    def rollback(self, reason: RollbackReason, cause: Reason) -> None:
        if cause is not Reason.ABORTED and watch_window.rollback_held(self, reason):
            return
        watch_window.stop(self, Reason.ROLLED_BACK, reason.message)
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
        previous = cond.condition(self.status.conditions, ConditionType.ROUTE_READY)
        if previous is None or previous.reason != problem.reason:
            self.event(problem.reason, problem.message)
        self.condition(ConditionType.ROUTE_READY, False, problem.reason, problem.message)
        if self.status.phase not in (Phase.SUCCEEDED, Phase.ROLLED_BACK):
            self.fail(problem.reason, problem.message)
        self.weight = None  # nothing can be written to a route that cannot be read
