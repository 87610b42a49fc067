"""No traffic without a working judge: before the candidate's first weight, and after a spec edit that
changes the analysis, every query of the analysis runs once (the reconciler runs them when
`check_due` says so and hands the run in as `Observations.analysis_check`). Until each answers, a
Pending rollout stays at weight 0 and an active one holds its weight and does not advance (its
candidate is still judged every interval: a breach rolls back), with
condition AnalysisReady False naming the metric, the address and the error; the check is retried
every analysis interval. No data is an answer: before its first weight the candidate has no traffic,
which minRequests and the verdicts deal with."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from modelgate.api import AnalysisSpec, ModelRolloutSpec, ModelRolloutStatus, Phase
from modelgate.api.analysis_check import AnalysisCheck, UnansweredQuery
from modelgate.core import limits
from modelgate.core.intents import Effect, Hold, Intent, Say, SetCondition, fields
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.results import AnalysisRun, MetricQuery, QueryResult
from modelgate.core.stage import watching
from modelgate.core.tick import TickView

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
        found.append(UnansweredQuery(error=limits.clip(error, limits.ANALYSIS_MESSAGE)))
    for name, measured in run.metrics.items():
        error = next((r.error for r in _results(measured) if r.error is not None), None)
        if error is not None:
            found.append(UnansweredQuery(metric=name, error=limits.clip(error, limits.ANALYSIS_MESSAGE)))
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
