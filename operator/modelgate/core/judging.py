"""How the candidate is judged: no traffic before every query of the analysis has answered once, the
gate's checks before its first weight, and each analysis run's verdicts (a breach rolls back,
failed queries pause or roll back, a rule likely to roll back a good candidate is warned of).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from modelgate.api import (
    AnalysisSpec,
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RollbackReason,
    Verdict,
)
from modelgate.api.analysis_check import AnalysisCheck, UnansweredQuery
from modelgate.api.gate_status import CheckState, CheckStatus, GateDecision, GateStatus
from modelgate.core import reasons, results
from modelgate.core.gate_judgement import MESSAGE, GateOutcome, decide_gate, job_name, observe_check, run_id
from modelgate.core.holds import deadline_paused
from modelgate.core.metric_verdicts import Evaluation, evaluate
from modelgate.core.model import (
    AskWeight,
    CommandAction,
    Effect,
    EnterStep,
    Event,
    Fail,
    Hold,
    Intent,
    Noted,
    RollBack,
    Say,
    SetCondition,
    Succeed,
    fields,
)
from modelgate.core.reasons import ConditionType, Reason, how_many
from modelgate.core.results import AnalysisRun, MetricQuery, QueryResult, cost_status
from modelgate.core.tick import TickView, watching

# -- analysis_run ----------------------------------------------------------------------------------
# What an analysis run does to a stepping rollout: its verdicts go to status, a breach rolls back, a likely
# false rollback is warned of, and failed queries count towards spec.rollback's maxConsecutiveErrors, then
# pause (status.pause PrometheusErrors, until `modelgate resume`) or roll back. The run is judged once
# (`judged`), recorded before the policy (`record_analysis`), and its rules read the record: they return
# intents, never write.


def judged(tick: TickView) -> Evaluation | None:
    """This tick's analysis run judged against the metrics, if one ran."""
    if tick.observed.analysis is None or tick.spec.analysis is None:
        return None
    return evaluate(tick.spec.analysis, tick.observed.analysis, tick.status.analysis)


def record_analysis(tick: TickView) -> Noted | None:
    """Bookkeeping: this tick's run in status (its verdicts, cost, the false rollbacks it makes
    likely, the failed runs in a row) and condition AnalysisHealthy, where no rule below speaks."""
    run, result, analysis = tick.observed.analysis, tick.analysed, tick.spec.analysis
    if run is None or result is None or analysis is None:
        return None
    recorded = {"analysis": result.metrics, "last_analysis_at": run.at, "cost": cost_status(analysis, run)}
    effects: list[Effect] = [fields(**recorded)]
    if result.breach is not None:
        return Noted(tuple(effects))  # analysis_verdict rolls back
    warnings = tick.status.false_rollback_warnings
    for toss in results.new_warnings(tick.spec, tick.status, run, result.metrics):
        effects.append(Say(Reason.FALSE_ROLLBACK_LIKELY, results.warning_message(toss)))
        warnings = results.remember(warnings, toss)
        effects.append(fields(false_rollback_warnings=warnings))
    if result.any_error:
        errors = reasons.one_more(tick.status.consecutive_prometheus_errors)
        effects.append(fields(consecutive_prometheus_errors=errors))
        if errors < tick.spec.rollback.max_consecutive_errors and not tick.error_paused:
            detail = _errors_detail(result, errors)
            effects.append(SetCondition(ConditionType.ANALYSIS_HEALTHY, False, Reason.QUERY_ERROR, detail))
        return Noted(tuple(effects))
    effects.append(fields(consecutive_prometheus_errors=0))
    effects += _health(tick, result, run.at)
    return Noted(tuple(effects))


def _health(tick: TickView, result: Evaluation, at: object) -> list[Effect]:
    """How a run whose queries all answered stands: Passing or Inconclusive (its deadline's clock)."""
    verdicts = ", ".join(f"{m.name}={m.verdict}" for m in result.metrics)
    if tick.error_paused:
        # A pause on errors lasts until `modelgate resume`, even once the queries succeed again.
        message = f"metric queries succeed again ({verdicts}); paused until `modelgate resume`"
        return [
            SetCondition(ConditionType.ANALYSIS_HEALTHY, False, Reason.PROMETHEUS_UNAVAILABLE, message),
            fields(message=f"paused: {message}"),
        ]
    settled = result.all_pass or not result.inconclusive
    effects: list[Effect] = [
        fields(inconclusive_since=None if settled else tick.status.inconclusive_since or at)
    ]
    if deadline_paused(tick):
        return effects  # held until `modelgate resume`; a breach still rolls back
    verdict = Reason.PASSING if result.all_pass else Reason.INCONCLUSIVE
    effects.append(SetCondition(ConditionType.ANALYSIS_HEALTHY, result.all_pass, verdict, verdicts))
    return effects


def analysis_verdict(tick: TickView) -> Intent:
    """A breach rolls back; so do failed queries past spec.rollback's limit with onPrometheusError
    rollback."""
    run, result = tick.observed.analysis, tick.analysed
    if run is None or result is None:
        return None
    if result.breach is not None:
        return RollBack(result.breach, Reason.METRIC_BREACH)
    errors = tick.status.consecutive_prometheus_errors
    rollback = tick.spec.rollback
    if (
        result.any_error
        and errors >= rollback.max_consecutive_errors
        and rollback.on_prometheus_error == "rollback"
    ):
        detail = _errors_detail(result, errors)
        reason = RollbackReason(time=run.at, message=reasons.clip(detail, reasons.ANALYSIS_MESSAGE))
        return RollBack(reason, Reason.PROMETHEUS_UNAVAILABLE)
    return None


def errors_hold(tick: TickView) -> Intent:
    """Failed queries past the limit (onPrometheusError pause) pause the rollout until `modelgate
    resume`, and so do failed queries while it is paused on them; the pause holds even once they
    succeed again."""
    result, spec = tick.analysed, tick.spec
    errors = tick.status.consecutive_prometheus_errors
    failing = result is not None and result.breach is None and result.any_error
    if not failing or (errors < spec.rollback.max_consecutive_errors and not tick.error_paused):
        return Hold(pause=PauseReason.PROMETHEUS_ERRORS) if tick.error_paused else None
    assert result is not None and spec.analysis is not None
    detail = _errors_detail(result, errors)
    said = (
        None
        if tick.error_paused
        else Event(Reason.ANALYSIS_PAUSED, f"{detail}; paused until `modelgate resume`")
    )
    fix = (
        f"fix what it names (the Prometheus at {spec.analysis.prometheus.address}: spec.analysis.prometheus)"
    )
    message = f"paused: {detail}; {fix}, then run `modelgate resume`"
    return Hold(message, PauseReason.PROMETHEUS_ERRORS, Reason.PROMETHEUS_UNAVAILABLE, detail, said)


def _errors_detail(result: Evaluation, errors: int) -> str:
    first_error = next(m for m in result.metrics if m.verdict is Verdict.ERROR)
    return f"metric queries failed {how_many(errors, 'time')} in a row: {first_error.message}"


# -- query_check -----------------------------------------------------------------------------------
# No traffic without a working judge: before the candidate's first weight, and after a spec edit that changes
# the analysis, every query of the analysis runs once (the reconciler runs them when `check_due` says so and
# hands the run in as `Observations.analysis_check`). Until each answers, a Pending rollout stays at weight 0
# and an active one holds its weight and does not advance (its candidate is still judged every interval: a
# breach rolls back), with condition AnalysisReady False naming the metric, the address and the error; the
# check is retried every analysis interval. No data is an answer: before its first weight the candidate has no
# traffic, which minRequests and the verdicts deal with.


_CHECKED_PHASES = frozenset({Phase.PENDING, Phase.PROGRESSING, Phase.PAUSED})
_SHOWN = 3  # unanswered metrics spelled out in the message; status.analysisCheck lists them all


# Digests by the identity of the analysis they were taken of (kept alive here, so that an id is not
# reused while cached): a tick asks up to three times (check, hold, wake-up), and an analysis is never
# edited in place (an edited spec is a new object).
_DIGESTS: dict[int, tuple[AnalysisSpec, str]] = {}
_DIGESTS_KEPT = 64


def digest(analysis: AnalysisSpec) -> str:
    known = _DIGESTS.get(id(analysis))
    if known is not None and known[0] is analysis:
        return known[1]
    value = hashlib.sha256(analysis.model_dump_json(by_alias=True).encode()).hexdigest()[:16]
    if len(_DIGESTS) >= _DIGESTS_KEPT:
        _DIGESTS.clear()
    _DIGESTS[id(analysis)] = (analysis, value)
    return value


def unchecked(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> bool:
    """Whether the analysis in force has yet to answer, in a phase that gives or holds weight on it
    (the watch window judges with the analysis that got it there)."""
    analysis = spec.analysis
    starting = status.phase is None  # its first tick makes it Pending
    if analysis is None or (not starting and (status.phase not in _CHECKED_PHASES or watching(status))):
        return False
    check = status.analysis_check
    if check is None:
        # Never checked: a rollout before its first weight. One that got weight without a check (from
        # an operator before the check) has no digest to tell an edit by; its runs are its check.
        return starting or status.phase is Phase.PENDING
    return check.analysis != digest(analysis) or not check.answered


def next_check_at(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> datetime | None:
    """When the queries are to run again: at once for an analysis not checked yet, else one interval
    after the last check that did not answer; None when no check is wanted."""
    if not unchecked(spec, status):
        return None
    check, analysis = status.analysis_check, spec.analysis
    assert analysis is not None
    if check is None or check.analysis != digest(analysis):
        return datetime.min.replace(tzinfo=UTC)
    return check.at + analysis.interval_timedelta


def check_due(spec: ModelRolloutSpec, status: ModelRolloutStatus, now: datetime) -> bool:
    at = next_check_at(spec, status)
    return at is not None and at <= now


def unanswered(run: AnalysisRun) -> tuple[UnansweredQuery, ...]:
    """Each metric (and the request count, without a metric) that one of its queries failed for."""
    found = []
    counted = (run.request_count, run.incumbent_request_count)
    error = next((r.error for r in counted if r is not None and r.error is not None), None)
    if error is not None:
        found.append(UnansweredQuery(error=reasons.clip(error, reasons.ANALYSIS_MESSAGE)))
    for name, measured in run.metrics.items():
        error = next((r.error for r in _results(measured) if r.error is not None), None)
        if error is not None:
            found.append(UnansweredQuery(metric=name, error=reasons.clip(error, reasons.ANALYSIS_MESSAGE)))
    return tuple(found)


def _results(measured: MetricQuery) -> list[QueryResult]:
    results = [measured.result, *([measured.incumbent] if measured.incumbent else [])]
    for side in measured.totals or ():
        results += [side.requests, side.events]
    for histogram in measured.buckets or ():
        results += [histogram.total, *(result for _, result in histogram.within)]
    return results


def check_noted(tick: TickView) -> tuple[Effect, ...]:
    """The check run in this tick, if any, for status.analysisCheck and condition AnalysisReady; a
    Warning Event when the queries stop answering."""
    run, analysis = tick.observed.analysis_check, tick.spec.analysis
    if run is None or analysis is None:
        return ()
    address = analysis.prometheus.address
    check = AnalysisCheck(analysis=digest(analysis), at=run.at, address=address, unanswered=unanswered(run))
    if check.answered:
        message = f"every query of the analysis answered (Prometheus at {address})"
        answered = SetCondition(ConditionType.ANALYSIS_READY, True, Reason.QUERIES_ANSWERED, message)
        return fields(analysis_check=check), answered
    message = _problem(check, analysis.interval)
    said = () if _unanswered_said(tick.status) else (Say(Reason.QUERY_UNANSWERED, message),)
    not_ready = SetCondition(ConditionType.ANALYSIS_READY, False, Reason.QUERY_UNANSWERED, message)
    return fields(analysis_check=check), *said, not_ready


def queries_hold(tick: TickView) -> Intent:
    """Holds while the analysis in force has not answered: the weight stays where it is (0 before the
    first), and the message says what to fix."""
    if not unchecked(tick.spec, tick.status):
        return None
    check, analysis, weight = tick.status.analysis_check, tick.spec.analysis, tick.status.current_weight
    assert analysis is not None
    holding = "the candidate gets no traffic" if weight == 0 else f"holding at weight {weight}"
    if check is None or not check.unanswered:
        message = f"{holding} until the analysis's queries answer: checking them"
    else:
        message = f"{holding}: {_problem(check, analysis.interval)}"
    return Hold(message)


def _problem(check: AnalysisCheck, interval: str) -> str:
    named = "; ".join(
        f"metric {q.metric}: {q.error}" if q.metric else f"counting requests (minRequests): {q.error}"
        for q in check.unanswered[:_SHOWN]
    )
    more = len(check.unanswered) - _SHOWN
    others = f" (and {more} more in status.analysisCheck)" if more > 0 else ""
    return (
        f"the analysis's queries to Prometheus at {check.address} do not answer: {named}{others}. "
        "Fix what the error names: spec.analysis.prometheus.address (or the Prometheus there, reachable "
        "from the operator), or the metric's query; "
        f"they are tried again every {interval}, and traffic moves once they answer"
    )


def _unanswered_said(status: ModelRolloutStatus) -> bool:
    """Whether this rollout has said (in a Warning) that the queries do not answer: the check is kept
    across rollouts, the Warning is said again in each."""
    before, started = status.analysis_check, status.rollout_started_at
    return before is not None and not before.answered and (started is None or before.at >= started)


# -- gating ----------------------------------------------------------------------------------------
# The gate phase of a tick: after the candidate is Available and before step 0, the checks of spec.gate run
# while the candidate gets no traffic; their verdicts decide a full release, a canary or a rejection (phase
# Failed, reason GateRejected, no weight ever written).


_CHECK_REASONS = {
    Verdict.PASS: Reason.GATE_CHECK_PASSED,
    Verdict.FAIL: Reason.GATE_CHECK_FAILED,
    Verdict.INCONCLUSIVE: Reason.GATE_CHECK_INCONCLUSIVE,
}


def _starting(tick: TickView, run: str, check: str) -> CheckStatus:
    """A check whose Job the reconciler is about to create."""
    job = job_name(tick.observed.rollout, tick.observed.uid, run, check)
    return CheckStatus(name=check, job=job, state=CheckState.RUNNING, message="starting its Job")


def gate_start(tick: TickView) -> tuple[Effect, ...]:
    """What starts the checks: their Jobs are named in status, and the reconciler creates them."""
    gate = tick.spec.gate
    assert gate is not None
    run = run_id(tick.observed.generation, tick.now)
    checks = tuple(_starting(tick, run, check.name) for check in gate.checks)
    names = ", ".join(check.name for check in gate.checks)
    started = fields(
        phase=Phase.GATING,
        pending_since=None,
        gate=GateStatus(started_at=tick.now, run=run, checks=checks),
        message=f"gate: running checks {names}; the candidate gets no traffic",
    )
    running = f"candidate {tick.spec.candidate.name} is Available; running checks {names}"
    return started, Say(Reason.GATE_STARTED, running)


def gating(tick: TickView) -> tuple[Intent, tuple[Effect, ...]]:
    """Reads what the checks' Jobs showed, judges those that ended, and decides once all have; with
    what that records."""
    spec, gate = tick.spec.gate, tick.status.gate
    if spec is None or gate is None:
        # spec.gate was removed while its checks ran: nothing is left to judge the candidate by.
        removed = (
            fields(phase=Phase.PROGRESSING),
            Say(Reason.ROLLOUT_STARTED, "spec.gate was removed; the steps start"),
        )
        return EnterStep(0), (AskWeight(0), *removed)
    checks = []
    noted: list[Effect] = [AskWeight(0)]
    for check in spec.checks:
        current = gate.check(check.name) or _starting(tick, gate.run, check.name)
        seen = observe_check(check, current, tick.observed.gate_checks.get(check.name), tick.now)
        if seen.verdict is not None and current.verdict is None:
            noted.append(Say(_CHECK_REASONS[seen.verdict], f"gate check {check.name}: {seen.message}"))
        checks.append(seen)
    checked = gate.model_copy(update={"checks": tuple(checks)})
    noted.append(fields(gate=checked))
    outcome = decide_gate(spec, tuple(checks))
    if outcome is None:
        waiting = "; ".join(f"{c.name}: {c.message}" for c in checks if c.verdict is None)
        noted.append(fields(message=f"gate: waiting for checks ({waiting}); the candidate gets no traffic"))
        return None, tuple(noted)
    intent, decided = act_on(tick, outcome, checked)
    return intent, (*noted, *decided)


def act_on(tick: TickView, outcome: GateOutcome, gate: GateStatus) -> tuple[Intent, tuple[Effect, ...]]:
    """Acts on the gate's decision: a rejection ends the rollout Failed at weight 0; a canary starts
    the steps; a full release skips them, or starts at spec.gate.full.startAtStep."""
    assert tick.spec.gate is not None
    message = reasons.clip(outcome.message, MESSAGE)  # model_copy does not check the schema's length
    decided = gate.model_copy(
        update={"decision": outcome.decision, "decided_at": tick.now, "message": message}
    )
    recorded = fields(gate=decided)
    if outcome.decision is GateDecision.REJECT:
        message = f"gate rejected {tick.spec.candidate.name}: {outcome.message}"
        rejected = SetCondition(ConditionType.COMPLETED, False, Reason.GATE_REJECTED, outcome.message)
        return Fail(Reason.GATE_REJECTED, message), (recorded, rejected, Say(Reason.GATE_REJECTED, message))
    passed = (
        recorded,
        Say(Reason.GATE_PASSED, f"gate decided {outcome.decision}: {outcome.message}"),
        fields(phase=Phase.PROGRESSING),
        Say(Reason.ROLLOUT_STARTED, f"candidate {tick.spec.candidate.name} passed the gate"),
    )
    start_at = tick.spec.gate.full.start_at_step
    if outcome.decision is GateDecision.FULL and start_at is None:
        return Succeed(), passed
    first, said = _first_step(tick, outcome.decision, start_at)
    return EnterStep(first), (*passed, *said)


def _first_step(
    tick: TickView, decision: GateDecision, start_at: int | None
) -> tuple[int, tuple[Effect, ...]]:
    """Where the steps start: startAtStep for a full release, else 0. A startAtStep past the steps
    (the CRD refuses it; a spec that never passed it) starts at 0 rather than skip the canary."""
    if decision is not GateDecision.FULL or start_at is None:
        return 0, ()
    if start_at >= len(tick.spec.steps):
        past = f"spec.gate.full.startAtStep {start_at} is past the {len(tick.spec.steps)} steps"
        return 0, (Say(Reason.GATE_PASSED, f"{past}: starting at step 0"),)
    return start_at, ()


def gate_pending(tick: TickView) -> bool:
    """Whether the rollout still owes its gate a run (set, and not decided for this rollout)."""
    return tick.spec.gate is not None and (tick.status.gate is None or tick.status.gate.decision is None)


def gate_command(tick: TickView, action: CommandAction) -> tuple[Intent, str, tuple[Effect, ...]] | None:
    """On the gate, `promote` accepts it as passed (a canary; `--full`, a full release where
    spec.gate.full allows one) and `abort` rejects it; None for a command that does not apply."""
    spec, gate = tick.spec.gate, tick.status.gate
    if spec is None or gate is None:
        return None  # the gate was removed: the tick starts the steps
    if action is CommandAction.ABORT:
        outcome, did = (
            GateOutcome(GateDecision.REJECT, "rejected by `modelgate abort`"),
            "the gate rejected the candidate",
        )
    elif action is CommandAction.PROMOTE:
        outcome = GateOutcome(GateDecision.CANARY, "passed by `modelgate promote`: a canary")
        did = "the gate passed the candidate: the steps start"
    elif action is CommandAction.PROMOTE_FULL and spec.full.allowed:
        outcome = GateOutcome(GateDecision.FULL, "passed by `modelgate promote --full`: a full release")
        did = "the gate passed the candidate for a full release"
    else:
        return None
    intent, decided = act_on(tick, outcome, gate)
    return intent, did, decided
