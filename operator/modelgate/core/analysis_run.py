"""What an analysis run does to a stepping rollout: its verdicts go to status, a breach rolls back,
a likely false rollback is warned of, and failed queries count towards spec.rollback's
maxConsecutiveErrors, then pause (status.pause PrometheusErrors, until `modelgate resume`) or roll back.
The run is judged once (`judged`), recorded before the policy (`record_analysis`), and its rules
read the record: they return intents, never write."""

from __future__ import annotations

from modelgate.api import PauseReason, RollbackReason, Verdict
from modelgate.core import false_rollback, limits
from modelgate.core.cost import cost_status
from modelgate.core.deadlines import deadline_paused
from modelgate.core.intents import Effect, Hold, Intent, Noted, RollBack, Say, SetCondition, fields
from modelgate.core.metric_verdicts import Evaluation, evaluate
from modelgate.core.model import Event
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.tick import TickView
from modelgate.core.wording import how_many


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
    for toss in false_rollback.new_warnings(tick.spec, tick.status, run, result.metrics):
        effects.append(Say(Reason.FALSE_ROLLBACK_LIKELY, false_rollback.warning_message(toss)))
        warnings = false_rollback.remember(warnings, toss)
        effects.append(fields(false_rollback_warnings=warnings))
    if result.any_error:
        errors = limits.one_more(tick.status.consecutive_prometheus_errors)
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
        reason = RollbackReason(time=run.at, message=limits.clip(detail, limits.ANALYSIS_MESSAGE))
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
