"""Turning one analysis run into verdicts. Missing data never passes: an empty result, NaN or too
few candidate requests is Inconclusive; a failed query is Error."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from modelgate.api import AnalysisSample, AnalysisSpec, MetricAnalysis, MetricSpec, RollbackReason, Verdict
from modelgate.core import limits
from modelgate.core.results import AnalysisRun, MetricQuery, QueryResult

HISTORY_LENGTH = 10


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    message: str


def judge(metric: MetricSpec, result: QueryResult, traffic: Judgement | None) -> Judgement:
    """The verdict for one metric's value; `traffic` is set when the run as a whole has too little."""
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
        return Judgement(Verdict.FAIL, f"{_show(value)} is above the maximum {_show(metric.max)}")
    if metric.min is not None and value < metric.min:
        return Judgement(Verdict.FAIL, f"{_show(value)} is below the minimum {_show(metric.min)}")
    return Judgement(Verdict.PASS, f"{_show(value)} {_bounds(metric)}")


def judge_traffic(request_count: QueryResult, min_requests: int) -> Judgement | None:
    """Inconclusive (or Error) for every metric when the candidate served too few requests."""
    if request_count.error is not None:
        return Judgement(Verdict.ERROR, f"counting candidate requests failed: {request_count.error}")
    count = request_count.value
    if count is None or math.isnan(count):
        if min_requests == 0:
            return None
        return Judgement(Verdict.INCONCLUSIVE, "no candidate requests in the window")
    if count < min_requests:
        return Judgement(
            Verdict.INCONCLUSIVE,
            f"only {count:.0f} candidate requests in the window; minRequests is {min_requests}",
        )
    return None


@dataclass(frozen=True)
class Evaluation:
    metrics: tuple[MetricAnalysis, ...]
    breach: RollbackReason | None  # the first metric whose failures went past its failureLimit
    any_error: bool

    @property
    def all_pass(self) -> bool:
        return bool(self.metrics) and all(m.verdict is Verdict.PASS for m in self.metrics)


def evaluate(analysis: AnalysisSpec, run: AnalysisRun, previous: tuple[MetricAnalysis, ...]) -> Evaluation:
    traffic = judge_traffic(run.request_count, analysis.min_requests)
    earlier = {m.name: m for m in previous}
    results = []
    breach = None
    for metric in analysis.metrics:
        measured = run.metrics[metric.name]
        judgement = judge(metric, measured.result, traffic)
        record = _record(metric, measured, judgement, run.at, earlier.get(metric.name))
        results.append(record)
        if breach is None and record.failures > metric.failure_limit:
            breach = _rollback_reason(metric, record, measured.result.value, run.at)
    return Evaluation(tuple(results), breach, any(m.verdict is Verdict.ERROR for m in results))


def _record(
    metric: MetricSpec,
    measured: MetricQuery,
    judgement: Judgement,
    at: datetime,
    earlier: MetricAnalysis | None,
) -> MetricAnalysis:
    value = _finite(measured.result.value)
    failures = (earlier.failures if earlier else 0) + (judgement.verdict is Verdict.FAIL)
    history = (
        *(earlier.history if earlier else ()),
        AnalysisSample(time=at, value=value, verdict=judgement.verdict),
    )
    return MetricAnalysis(
        name=metric.name,
        verdict=judgement.verdict,
        time=at,
        value=value,
        query=limits.clip(measured.query, limits.QUERY),
        message=limits.clip(judgement.message, limits.ANALYSIS_MESSAGE),
        failures=failures,
        history=history[-HISTORY_LENGTH:],
    )


def _rollback_reason(
    metric: MetricSpec, record: MetricAnalysis, measured: float | None, at: datetime
) -> RollbackReason:
    # The measured value, not the recorded one: +-Inf is recorded as None but still says which bound.
    above_max = metric.max is not None and measured is not None and measured > metric.max
    return RollbackReason(
        time=at,
        metric=metric.name,
        value=record.value,
        threshold=metric.max if above_max else metric.min,
        query=record.query,
        message=limits.clip(
            f"metric {metric.name}: {record.message}; "
            f"{record.failures} breach(es), failureLimit {metric.failure_limit}",
            limits.ANALYSIS_MESSAGE,
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
