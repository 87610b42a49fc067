"""Turning one analysis run into verdicts. Missing data never passes: an empty result, NaN or too
few requests (the candidate's, and the incumbent's for metrics that compare or test) is
Inconclusive; a failed query is Error. A dry-run metric is judged and shown, and decides nothing."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from modelgate.api import (
    AnalysisSample,
    AnalysisSpec,
    BreachRule,
    CounterTotals,
    MetricAnalysis,
    MetricSpec,
    RollbackReason,
    SequentialEvidence,
    Verdict,
)
from modelgate.core import limits, sequential
from modelgate.core.missing import name_missing
from modelgate.core.results import AnalysisRun, MetricQuery, QueryResult

HISTORY_LENGTH = 10


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    message: str
    broken: BreachRule | None = None  # with a Fail: the rule the value broke
    bound: float | None = None  # and its effective bound, where it has one


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
    if rule.max_increase is not None and candidate > base + rule.max_increase:
        return Judgement(
            Verdict.FAIL,
            f"{_show(candidate)} is above the incumbent's {_show(base)} + {_show(rule.max_increase)}",
            BreachRule.MAX_INCREASE,
            base + rule.max_increase,
        )
    return None


def accumulate(measured: MetricQuery, earlier: SequentialEvidence | None) -> SequentialEvidence | None:
    """The sequential test's evidence after this run's totals; unchanged when they are missing. The
    interval's counts are what the totals grew by since the previous reading; the first reading, and
    one in which a total went down (a counter reset), is only a baseline."""
    totals = _read_totals(measured)
    if totals is None:
        return earlier  # no data this interval: the test waits, it never guesses
    candidate, incumbent = totals
    before = earlier or SequentialEvidence(
        log_likelihood_ratios=(),
        log_evidence=0.0,
        candidate_events=0,
        candidate_requests=0,
        incumbent_events=0,
        incumbent_requests=0,
    )
    c_counts = _grown(before.candidate_totals, candidate)
    i_counts = _grown(before.incumbent_totals, incumbent)
    if c_counts is None or i_counts is None:
        # A baseline, or a reset on either side: the test weighs both sides' counts of one interval,
        # so the interval counts nothing on either (sequential.py says why that keeps alpha).
        c_counts = i_counts = sequential.Counts(0.0, 0.0)
    ratios = sequential.update(before.log_likelihood_ratios, c_counts, i_counts)
    return SequentialEvidence(
        log_likelihood_ratios=tuple(round(r, 6) for r in ratios),
        log_evidence=round(sequential.log_evidence(ratios), 6),
        candidate_events=before.candidate_events + c_counts.events,
        candidate_requests=before.candidate_requests + c_counts.requests,
        incumbent_events=before.incumbent_events + i_counts.events,
        incumbent_requests=before.incumbent_requests + i_counts.requests,
        candidate_totals=CounterTotals(requests=candidate.requests, events=candidate.events),
        incumbent_totals=CounterTotals(requests=incumbent.requests, events=incumbent.events),
    )


def _read_totals(measured: MetricQuery) -> tuple[sequential.Counts, sequential.Counts] | None:
    if measured.totals is None:
        return None
    values = [q.value for side in measured.totals for q in (side.requests, side.events)]
    if any(v is None or not math.isfinite(v) or v < 0 for v in values):
        return None
    c_requests, c_events, i_requests, i_events = (float(v or 0.0) for v in values)
    return sequential.Counts(c_requests, c_events), sequential.Counts(i_requests, i_events)


def _grown(baseline: CounterTotals | None, now: sequential.Counts) -> sequential.Counts | None:
    if baseline is None:
        return None
    return now.since(sequential.Counts(baseline.requests, baseline.events))


def test_verdict(metric: MetricSpec, evidence: SequentialEvidence | None) -> Judgement | None:
    """Fail when the sequential test rejects; None otherwise."""
    if metric.sequential is None or evidence is None:
        return None
    alpha = metric.sequential.alpha
    if not sequential.rejects(evidence.log_likelihood_ratios, alpha):
        return None
    return Judgement(
        Verdict.FAIL,
        f"sequential test: the candidate's rate is higher (evidence {math.exp(evidence.log_evidence):.3g} "
        f">= 1/alpha = {1 / alpha:.3g}; candidate {evidence.candidate_events:.0f}/"
        f"{evidence.candidate_requests:.0f}, incumbent {evidence.incumbent_events:.0f}/"
        f"{evidence.incumbent_requests:.0f})",
        BreachRule.SEQUENTIAL,
    )


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
        evidence = accumulate(measured, before.sequential if before else None) if metric.sequential else None
        judgement = _judge_all(metric, measured, traffic, incumbent_traffic, evidence)
        record = name_missing(_record(metric, measured, judgement, run.at, before, evidence), measured)
        results.append(record)
        if breach is None and not metric.dry_run and record.failures > metric.failure_limit:
            breach = _rollback_reason(metric, record, judgement, run.at)
    gating = frozenset(m.name for m in analysis.metrics if not m.dry_run)
    any_error = any(m.verdict is Verdict.ERROR for m in results if m.name in gating)
    return Evaluation(tuple(results), gating, breach, any_error)


def _judge_all(
    metric: MetricSpec,
    measured: MetricQuery,
    traffic: Judgement | None,
    incumbent_traffic: Judgement | None,
    evidence: SequentialEvidence | None,
) -> Judgement:
    against_incumbent = metric.compare is not None or metric.sequential is not None
    rejected = test_verdict(metric, evidence)
    if rejected is not None:
        return rejected  # anytime-valid: the evidence so far is enough, whatever this window's size
    judgement = judge(metric, measured.result, traffic or (incumbent_traffic if against_incumbent else None))
    if judgement.verdict is not Verdict.PASS or metric.compare is None:
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
    evidence: SequentialEvidence | None,
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
        incumbent_value=_finite(measured.incumbent.value) if measured.incumbent else None,
        query=limits.clip(measured.query, limits.QUERY),
        message=limits.clip(judgement.message, limits.ANALYSIS_MESSAGE),
        failures=failures,
        history=history[-HISTORY_LENGTH:],
        sequential=evidence,
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
        incumbent_value=record.incumbent_value,
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


def _comparison(metric: MetricSpec, incumbent: QueryResult | None) -> str:
    if incumbent is None or incumbent.value is None:
        return ""
    return f"incumbent {_show(incumbent.value)}"
