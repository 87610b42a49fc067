"""Turning one analysis run into verdicts. Missing data never passes: an empty result, NaN or too
few requests (the candidate's, and the incumbent's for metrics that compare or test) is
Inconclusive; a failed query is Error. A dry-run metric is judged and shown, and decides nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from modelgate.api import (
    PER_ACCELERATOR_PRESETS,
    AnalysisSample,
    AnalysisSpec,
    BreachRule,
    MetricAnalysis,
    MetricSpec,
    QuantileEvidence,
    RollbackReason,
    SequentialEvidence,
    Verdict,
)
from modelgate.core import counted, latency, reasons
from modelgate.core.reasons import how_many
from modelgate.core.results import AnalysisRun, Judgement, MetricQuery, QueryResult

# -- metric_verdicts -------------------------------------------------------------------------------


HISTORY_LENGTH = 10


def judge(metric: MetricSpec, result: QueryResult, traffic: Judgement | None) -> Judgement:
    """The verdict of one value against the metric's fixed bounds; `traffic` is set when the run has
    too little traffic for any verdict."""
    if result.error is not None:
        return Judgement(Verdict.ERROR, result.error)
    if traffic is not None:
        return traffic
    if result.value is None:
        return Judgement(Verdict.INCONCLUSIVE, "the query returned no data")
    value = result.value
    if math.isnan(value):
        return Judgement(Verdict.INCONCLUSIVE, "the query returned NaN (no data in the window)")
    if metric.max is not None and value > metric.max:
        message = f"{_show(value)} is above the maximum {_show(metric.max)}"
        return Judgement(Verdict.FAIL, message, BreachRule.MAX, metric.max)
    if metric.min is not None and value < metric.min:
        message = f"{_show(value)} is below the minimum {_show(metric.min)}"
        return Judgement(Verdict.FAIL, message, BreachRule.MIN, metric.min)
    return Judgement(Verdict.PASS, f"{_show(value)} {_bounds(metric)}".rstrip())


def judge_traffic(request_count: QueryResult, min_requests: int, side: str = "candidate") -> Judgement | None:
    """Inconclusive (or Error) when one side served too few requests."""
    if request_count.error is not None:
        return Judgement(Verdict.ERROR, f"counting {side} requests failed: {request_count.error}")
    count = request_count.value
    if count is None or math.isnan(count):
        if min_requests == 0:
            return None
        return Judgement(Verdict.INCONCLUSIVE, f"no {side} requests in the window")
    if count < min_requests:
        return Judgement(
            Verdict.INCONCLUSIVE,
            f"only {count:.0f} {side} requests in the window; minRequests is {min_requests}",
        )
    return None


def compare(metric: MetricSpec, candidate: float, incumbent: QueryResult | None) -> Judgement | None:
    """The candidate's value against the incumbent's; None when it passes."""
    rule = metric.compare
    assert rule is not None
    if incumbent is None or incumbent.error is not None:
        detail = incumbent.error if incumbent is not None else "it was not queried"
        return Judgement(Verdict.ERROR, f"the incumbent's query failed: {detail}")
    if incumbent.value is None or math.isnan(incumbent.value):
        return Judgement(Verdict.INCONCLUSIVE, "the incumbent's query returned no data")
    base = incumbent.value
    if rule.max_ratio is not None and candidate > rule.max_ratio * base:
        return Judgement(
            Verdict.FAIL,
            f"{_show(candidate)} is above {_show(rule.max_ratio)} x the incumbent's {_show(base)}",
            BreachRule.MAX_RATIO,
            rule.max_ratio * base,
        )
    if rule.min_ratio is not None and candidate < rule.min_ratio * base:
        return Judgement(
            Verdict.FAIL,
            f"{_show(candidate)} is below {_show(rule.min_ratio)} x the incumbent's {_show(base)}",
            BreachRule.MIN_RATIO,
            rule.min_ratio * base,
        )
    if rule.max_increase is not None and candidate > base + rule.max_increase:
        return Judgement(
            Verdict.FAIL,
            f"{_show(candidate)} is above the incumbent's {_show(base)} + {_show(rule.max_increase)}",
            BreachRule.MAX_INCREASE,
            base + rule.max_increase,
        )
    return None


@dataclass(frozen=True)
class Evaluation:
    metrics: tuple[MetricAnalysis, ...]
    gating: frozenset[str]  # the metrics that decide (all but dry runs)
    breach: RollbackReason | None  # the first gating metric whose failures went past its failureLimit
    any_error: bool  # of a gating metric

    @property
    def all_pass(self) -> bool:
        deciding = [m for m in self.metrics if m.name in self.gating]
        return all(m.verdict is Verdict.PASS for m in deciding)

    @property
    def inconclusive(self) -> bool:
        return any(m.verdict is Verdict.INCONCLUSIVE for m in self.metrics if m.name in self.gating)


def evaluate(analysis: AnalysisSpec, run: AnalysisRun, previous: tuple[MetricAnalysis, ...]) -> Evaluation:
    traffic = judge_traffic(run.request_count, analysis.min_requests)
    incumbent_traffic = judge_traffic(run.incumbent_traffic(), analysis.min_requests, "incumbent")
    earlier = {m.name: m for m in previous}
    results = []
    breach = None
    for metric in analysis.metrics:
        measured = run.metrics[metric.name]
        before = earlier.get(metric.name)
        kept = before.sequential if before else None
        restarted = counted.restart_cause(metric, kept) if metric.counts_events else None
        evidence = counted.accumulate(metric, measured, kept) if metric.counts_events else None
        quantiles = _quantiles(metric, measured, before)
        on_counts = counted.judge_counts(metric, evidence, restarted) or latency.judge(
            metric, quantiles, measured
        )
        judgement = _unaccelerated(metric, run) or _judge_all(
            metric, measured, traffic, incumbent_traffic, on_counts
        )
        record = name_missing(
            _record(metric, measured, judgement, run.at, before, (evidence, quantiles)), measured
        )
        results.append(record)
        if breach is None and not metric.dry_run and record.failures > metric.failure_limit:
            breach = _rollback_reason(metric, record, judgement, run.at)
    gating = frozenset(m.name for m in analysis.metrics if not m.dry_run)
    any_error = any(m.verdict is Verdict.ERROR for m in results if m.name in gating)
    return Evaluation(tuple(results), gating, breach, any_error)


def _quantiles(
    metric: MetricSpec, measured: MetricQuery, before: MetricAnalysis | None
) -> QuantileEvidence | None:
    if not metric.bounds_quantile:
        return None
    return latency.accumulate(metric, measured, before.quantiles if before else None)


def _unaccelerated(metric: MetricSpec, run: AnalysisRun) -> Judgement | None:
    """Inconclusive for a per-accelerator metric when a side has no accelerators (its query is not
    run: it would divide by zero, or price nothing)."""
    if metric.preset not in PER_ACCELERATOR_PRESETS:
        return None
    if run.accelerators is None:
        return Judgement(Verdict.INCONCLUSIVE, "the sides' accelerators were not counted")
    missing = run.accelerators.missing()
    return None if missing is None else Judgement(Verdict.INCONCLUSIVE, missing)


def _judge_all(
    metric: MetricSpec,
    measured: MetricQuery,
    traffic: Judgement | None,
    incumbent_traffic: Judgement | None,
    on_counts: Judgement | None,
) -> Judgement:
    against_incumbent = metric.compare is not None or metric.sequential is not None
    if on_counts is not None and on_counts.verdict is Verdict.FAIL:
        return on_counts  # anytime-valid: the evidence so far is enough, whatever this window's size
    judgement = judge(metric, measured.result, traffic or (incumbent_traffic if against_incumbent else None))
    if judgement.verdict is not Verdict.PASS:
        return judgement
    if on_counts is not None:
        return on_counts  # Inconclusive: a margin not yet shown
    if metric.compare is None or metric.compare.confidence is not None:
        return judgement
    assert measured.result.value is not None
    return compare(metric, measured.result.value, measured.incumbent) or Judgement(
        Verdict.PASS, f"{judgement.message}; {_comparison(metric, measured.incumbent)}".strip("; ")
    )


def _record(
    metric: MetricSpec,
    measured: MetricQuery,
    judgement: Judgement,
    at: datetime,
    earlier: MetricAnalysis | None,
    evidence: tuple[SequentialEvidence | None, QuantileEvidence | None],
) -> MetricAnalysis:
    """The metric's record; `evidence`: its counts' and its quantiles', built in (not copied in after)."""
    value = _finite(measured.result.value)
    failures = earlier.failures if earlier else 0
    if judgement.verdict is Verdict.FAIL:
        failures = reasons.one_more(failures)
    history = (
        *(earlier.history if earlier else ()),
        AnalysisSample(time=at, value=value, verdict=judgement.verdict),
    )
    return MetricAnalysis(
        name=metric.name,
        verdict=judgement.verdict,
        time=at,
        value=value,
        incumbent_value=_finite(measured.incumbent.value) if measured.incumbent else None,
        query=reasons.clip(measured.query, reasons.QUERY),
        message=reasons.clip(judgement.message, reasons.ANALYSIS_MESSAGE),
        failures=failures,
        history=history[-HISTORY_LENGTH:],
        sequential=evidence[0],
        quantiles=evidence[1],
    )


def _rollback_reason(
    metric: MetricSpec, record: MetricAnalysis, judgement: Judgement, at: datetime
) -> RollbackReason:
    """The breach as data; the rule and bound are this evaluation's (an earlier Fail counted toward
    failureLimit may have broken another)."""
    return RollbackReason(
        time=at,
        metric=metric.name,
        value=record.value,
        threshold=_finite(judgement.bound),
        rule=judgement.broken,
        bounds=judgement.bounds,
        quantile_bounds=judgement.quantile_bounds,
        incumbent_value=record.incumbent_value,
        query=record.query,
        message=reasons.clip(
            f"metric {metric.name}: {record.message}; "
            f"{how_many(record.failures, 'breach', 'breaches')}, failureLimit {metric.failure_limit}",
            reasons.ANALYSIS_MESSAGE,
        ),
    )


def _finite(value: float | None) -> float | None:
    # Status holds finite numbers only; NaN and +Inf are described in the message instead.
    return value if value is not None and math.isfinite(value) else None


def _show(value: float) -> str:
    return f"{value:.4g}"


def _bounds(metric: MetricSpec) -> str:
    limits_text = []
    if metric.min is not None:
        limits_text.append(f">= {_show(metric.min)}")
    if metric.max is not None:
        limits_text.append(f"<= {_show(metric.max)}")
    return " and ".join(limits_text)


def _comparison(metric: MetricSpec, incumbent: QueryResult | None) -> str:
    if incumbent is None or incumbent.value is None:
        return ""
    return f"incumbent {_show(incumbent.value)}"


# -- missing ---------------------------------------------------------------------------------------
# An Inconclusive metric whose data is missing because a series it reads does not exist (nobody exports it)
# names the series and the component that exports it, as data and in its message: no amount of waiting brings
# such data.


def name_missing(record: MetricAnalysis, measured: MetricQuery) -> MetricAnalysis:
    if record.verdict is not Verdict.INCONCLUSIVE or not measured.missing:
        return record
    named = "; ".join(missing.describe() for missing in measured.missing)
    message = f"{record.message or 'no data'}; no such series: {named}"
    return record.model_copy(
        update={
            "missing_series": measured.missing,
            "message": reasons.clip(message, reasons.ANALYSIS_MESSAGE),
        }
    )
