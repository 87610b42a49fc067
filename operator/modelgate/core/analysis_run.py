"""What an analysis run does to a stepping rollout: its verdicts go to status, a breach rolls back,
a likely false rollback is warned of, and failed queries count towards spec.rollback's
maxConsecutiveErrors, then pause (status.pause PrometheusErrors, until `modelgate resume`) or roll back."""

from __future__ import annotations

from modelgate.api import PauseReason, Phase, RollbackReason, Verdict
from modelgate.core import false_rollback, limits
from modelgate.core.cost import cost_status
from modelgate.core.deadlines import deadline_paused
from modelgate.core.intents import Hold, Intent, RollBack
from modelgate.core.metric_verdicts import evaluate
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.tick import Tick
from modelgate.core.wording import how_many


def analysis_verdict(tick: Tick) -> Intent:
    """Records this tick's analysis run, if one ran; a breach, or failed queries past
    spec.rollback's limit with onPrometheusError rollback, roll back."""
    if tick.observed.analysis is None or tick.spec.analysis is None:
        return None
    run = tick.observed.analysis
    result = evaluate(tick.spec.analysis, run, tick.status.analysis)
    tick.update(analysis=result.metrics, last_analysis_at=run.at, cost=cost_status(tick.spec.analysis, run))
    if result.breach is not None:
        return RollBack(result.breach, Reason.METRIC_BREACH)
    for toss in false_rollback.new_warnings(tick.spec, tick.status, run):
        tick.event(Reason.FALSE_ROLLBACK_LIKELY, false_rollback.warning_message(toss))
        warned = false_rollback.remember(tick.status.false_rollback_warnings, toss)
        tick.update(false_rollback_warnings=warned)
    if not result.any_error:
        tick.update(consecutive_prometheus_errors=0)
        verdicts = ", ".join(f"{m.name}={m.verdict}" for m in result.metrics)
        if tick.error_paused:
            # A pause on errors lasts until `modelgate resume`, even once the queries succeed again.
            message = f"metric queries succeed again ({verdicts}); paused until `modelgate resume`"
            tick.condition(ConditionType.ANALYSIS_HEALTHY, False, Reason.PROMETHEUS_UNAVAILABLE, message)
            tick.update(message=f"paused: {message}")
            return None
        tick.update(
            inconclusive_since=None
            if result.all_pass or not result.inconclusive
            else tick.status.inconclusive_since or run.at
        )
        if deadline_paused(tick):
            return None  # held until `modelgate resume`; a breach still rolls back
        passing = result.all_pass
        verdict = Reason.PASSING if passing else Reason.INCONCLUSIVE
        tick.condition(ConditionType.ANALYSIS_HEALTHY, passing, verdict, verdicts)
        return None
    errors = limits.one_more(tick.status.consecutive_prometheus_errors)
    tick.update(consecutive_prometheus_errors=errors)
    first_error = next(m for m in result.metrics if m.verdict is Verdict.ERROR)
    detail = f"metric queries failed {how_many(errors, 'time')} in a row: {first_error.message}"
    limit = tick.spec.rollback.max_consecutive_errors
    if errors < limit and not tick.error_paused:
        tick.condition(ConditionType.ANALYSIS_HEALTHY, False, Reason.QUERY_ERROR, detail)
        return None
    if errors >= limit and tick.spec.rollback.on_prometheus_error == "rollback":
        reason = RollbackReason(time=run.at, message=limits.clip(detail, limits.ANALYSIS_MESSAGE))
        return RollBack(reason, Reason.PROMETHEUS_UNAVAILABLE)
    if not tick.error_paused:
        tick.event(Reason.ANALYSIS_PAUSED, f"{detail}; paused until `modelgate resume`")
    tick.condition(ConditionType.ANALYSIS_HEALTHY, False, Reason.PROMETHEUS_UNAVAILABLE, detail)
    tick.pause(PauseReason.PROMETHEUS_ERRORS, detail)
    address = tick.spec.analysis.prometheus.address
    fix = f"fix what it names (the Prometheus at {address}: spec.analysis.prometheus)"
    tick.update(phase=Phase.PAUSED, message=f"paused: {detail}; {fix}, then run `modelgate resume`")
    return None


def errors_hold(tick: Tick) -> Intent:
    """Paused on failed queries: held until `modelgate resume`, even once they succeed again."""
    return Hold(pause=PauseReason.PROMETHEUS_ERRORS) if tick.error_paused else None
