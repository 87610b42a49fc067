"""A ModelEvaluation's tick, pure: decide(spec, status, observations, now) -> EvaluationDecision.

One run at a time: a run due (by the schedule, or a new run-now annotation) while another runs
starts when it ends; fires missed meanwhile collapse into that one run, as a CronJob's do.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from modelgate.api.cron import parse_schedule
from modelgate.api.evaluation_spec import ModelEvaluationSpec
from modelgate.api.evaluation_status import (
    MAX_RUN_NOW,
    BaselineStatus,
    CheckRecord,
    EvaluationRun,
    ModelEvaluationStatus,
    RunOutcome,
)
from modelgate.api.statusmodel import Verdict
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured, job_name
from modelgate.core.reasons import set_condition
from modelgate.core.stepping import GATE_POLL
from modelgate.modelevaluation.engine.decision import (
    Action,
    DeleteJobs,
    EvaluationCondition,
    EvaluationDecision,
    EvaluationObservations,
    EvaluationReason,
    ExportRegressed,
    PostEvent,
    StartRun,
)
from modelgate.modelevaluation.engine.run_outcome import baseline_of, judge_run

# While a run runs, its Jobs' watch events wake the loop; this is the look it takes without one, as
# often as a rollout's gate looks: a Pod whose container cannot start (a missing Secret) changes no Job.
RUNNING_RECHECK = GATE_POLL
# A run just started looks again at once: a check whose Job cannot be made (a missing ConfigMap)
# has no Job event to wake it.
FIRST_LOOK = timedelta(seconds=1)
RUN_ID_FORMAT = "%Y%m%dT%H%M%S"


@dataclass
class _Tick:
    spec: ModelEvaluationSpec
    status: ModelEvaluationStatus
    seen: EvaluationObservations
    now: datetime
    name: str
    uid: str
    actions: list[Action] = field(default_factory=list)

    def event(self, warning: bool, reason: EvaluationReason, message: str) -> None:
        self.actions.append(PostEvent(warning, reason, message))

    def update(self, **changes: object) -> None:
        self.status = self.status.model_copy(update=changes)


def decide(
    spec: ModelEvaluationSpec,
    status: ModelEvaluationStatus,
    seen: EvaluationObservations,
    now: datetime,
    *,
    name: str,
    uid: str,
) -> EvaluationDecision:
    tick = _Tick(spec, status, seen, now, name, uid)
    tick.update(observed_generation=seen.generation)
    baseline = _baseline(tick)
    _finish_running(tick, baseline)
    _start_due(tick)
    _bound_history(tick)
    _conditions(tick, baseline)
    tick.actions.append(ExportRegressed(_regressed_checks(tick.status)))
    return EvaluationDecision(tick.status, tuple(tick.actions), _wake_at(tick))


def decide_unusable(
    status: ModelEvaluationStatus, message: str, now: datetime, generation: int
) -> EvaluationDecision:
    """A spec the operator cannot use (what admission could not catch): Ready False, nothing runs."""
    conditions = set_condition(
        status.conditions,
        EvaluationCondition.READY,
        False,
        EvaluationReason.INVALID_SPEC,
        message,
        now,
        generation,
    )
    changed = status.model_copy(update={"conditions": conditions, "observed_generation": generation})
    return EvaluationDecision(changed, (), None)


def _baseline(tick: _Tick) -> BaselineStatus | str | None:
    """The baseline's scores; why they are unavailable; or None when the spec sets none."""
    wanted = tick.spec.baseline
    if wanted is None:
        return None
    if wanted.promoted is not None:
        found = tick.seen.promoted
        return (
            found
            if found is not None
            else f"spec.baseline.promoted: ModelRollout {wanted.promoted.rollout} not read"
        )
    assert wanted.run is not None
    run = tick.status.run(wanted.run.id)
    if run is not None and run.outcome in (RunOutcome.PASSED, RunOutcome.REGRESSED):
        return baseline_of(run)
    kept = tick.status.baseline
    if kept is not None and kept.source == f"run/{wanted.run.id}":
        return kept  # the run left the history; its scores stay
    return f"spec.baseline.run.id: run {wanted.run.id} is not a judged run of this evaluation"


def _finish_running(tick: _Tick, baseline: BaselineStatus | str | None) -> None:
    running = _running(tick.status)
    if running is None:
        return
    observed = {name: tick.seen.checks.get(name) for name in (c.name for c in running.checks)}
    finished = {n: o for n, o in observed.items() if isinstance(o, CheckMeasured | CheckFailed)}
    if len(finished) < len(running.checks):
        tick.actions.append(StartRun(running.id, tuple((c.name, c.job) for c in running.checks)))
        return
    usable = baseline if isinstance(baseline, BaselineStatus) else None
    judged = judge_run(tick.spec, running, finished, usable, tick.now)
    runs = tuple(judged if run.id == judged.id else run for run in tick.status.runs)
    tick.update(runs=runs, last_outcome=judged.outcome)
    tick.actions.append(DeleteJobs(tuple(check.job for check in judged.checks)))
    message = f"run {judged.id}: {judged.message}"
    if judged.outcome is RunOutcome.PASSED:
        tick.event(False, EvaluationReason.RUN_PASSED, message)
    elif judged.outcome is RunOutcome.REGRESSED:
        tick.event(True, EvaluationReason.REGRESSED, message)
    else:
        tick.event(True, EvaluationReason.RUN_FAILED, f"{message} ({judged.reason})")


def _next_fire(tick: _Tick) -> datetime:
    since = tick.status.last_schedule_time or tick.seen.created_at
    return parse_schedule(tick.spec.schedule).next_after(since)


def _start_due(tick: _Tick) -> None:
    token = run_now_token(tick.seen.run_now)
    on_demand = token is not None and token != tick.status.last_run_now
    scheduled = _next_fire(tick) <= tick.now
    if scheduled and tick.spec.suspend:
        tick.update(last_schedule_time=tick.now)  # skipped, not made up later
        scheduled = False
    if not (on_demand or scheduled) or _running(tick.status) is not None:
        return
    run_id = tick.now.strftime(RUN_ID_FORMAT)
    if tick.status.run(run_id) is not None:
        return  # a run started this second already; the next tick starts this one
    checks = tuple(
        CheckRecord(name=check.name, job=job_name(tick.name, tick.uid, run_id, check.name))
        for check in tick.spec.checks
    )
    run = EvaluationRun(
        id=run_id, started_at=tick.now, on_demand=not scheduled, outcome=RunOutcome.RUNNING, checks=checks
    )
    changes: dict[str, object] = {"runs": (run, *tick.status.runs), "last_run_time": tick.now}
    if scheduled:
        changes["last_schedule_time"] = tick.now
    if on_demand:
        changes["last_run_now"] = token
    tick.update(**changes)
    tick.actions.append(StartRun(run_id, tuple((c.name, c.job) for c in checks)))
    how = "on demand" if not scheduled else f"on schedule {tick.spec.schedule}"
    tick.event(False, EvaluationReason.RUN_STARTED, f"run {run_id} started {how}")


def run_now_token(value: str | None) -> str | None:
    """What status.lastRunNow records of the annotation: its value, or a digest of a value longer
    than the field holds (annotations may hold 256 KiB; a clipped value could equal another)."""
    if value is None or len(value) <= MAX_RUN_NOW:
        return value
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()


def _bound_history(tick: _Tick) -> None:
    kept, dropped = tick.status.runs[: tick.spec.history_limit], tick.status.runs[tick.spec.history_limit :]
    if not dropped:
        return
    tick.update(runs=kept)
    tick.actions.append(DeleteJobs(tuple(check.job for run in dropped for check in run.checks)))


def _conditions(tick: _Tick, baseline: BaselineStatus | str | None) -> None:
    generation = tick.seen.generation
    if isinstance(baseline, str):
        ready = (False, EvaluationReason.BASELINE_UNAVAILABLE, baseline)
    elif tick.spec.suspend:
        ready = (True, EvaluationReason.SUSPENDED, "suspended: only on-demand runs start")
    else:
        next_fire = _next_fire(tick).isoformat()
        ready = (True, EvaluationReason.SCHEDULED, f"the next scheduled run is at {next_fire}")
    conditions = set_condition(
        tick.status.conditions, EvaluationCondition.READY, *ready, tick.now, generation
    )
    judged = _newest_judged(tick.status)
    if judged is None:
        regressed = (False, EvaluationReason.NO_RUN_YET, "no run has been judged yet")
    elif judged.outcome is RunOutcome.REGRESSED:
        regressed = (True, EvaluationReason.REGRESSED, f"run {judged.id}: {judged.message}")
    else:
        regressed = (False, EvaluationReason.NOT_REGRESSED, f"run {judged.id}: {judged.message}")
    conditions = set_condition(conditions, EvaluationCondition.REGRESSED, *regressed, tick.now, generation)
    tick.update(
        conditions=conditions,
        baseline=baseline if isinstance(baseline, BaselineStatus) else tick.status.baseline,
    )


def _running(status: ModelEvaluationStatus) -> EvaluationRun | None:
    return next((run for run in status.runs if run.outcome is RunOutcome.RUNNING), None)


def _newest_judged(status: ModelEvaluationStatus) -> EvaluationRun | None:
    """The newest run that said whether the model regressed (a Failed run says nothing)."""
    judged = (RunOutcome.PASSED, RunOutcome.REGRESSED)
    return next((run for run in status.runs if run.outcome in judged), None)


def _regressed_checks(status: ModelEvaluationStatus) -> tuple[tuple[str, bool], ...]:
    run = _newest_judged(status)
    if run is None:
        return ()
    return tuple((check.name, any(s.verdict is Verdict.FAIL for s in check.scores)) for check in run.checks)


def _wake_at(tick: _Tick) -> datetime | None:
    running = _running(tick.status)
    if running is not None:
        return tick.now + (FIRST_LOOK if running.started_at == tick.now else RUNNING_RECHECK)
    if tick.spec.suspend:
        return None
    return _next_fire(tick)
