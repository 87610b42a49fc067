"""Judging a metric on its counts since the rollout began (core/sequential.py): the sequential test
(Fail above tolerance; with a margin, Pass only below it) and comparisons with confidence. Each is a
pure function of the metric's spec and the evidence in status, so `modelgate plan` and the tests call
exactly what the operator does.
"""

from __future__ import annotations

import math

from modelgate.api import (
    BreachRule,
    ConfidenceBounds,
    CounterTotals,
    MetricSpec,
    SequentialEvidence,
    SequentialTest,
    Verdict,
)
from modelgate.core import sequential
from modelgate.core.results import Judgement, MetricQuery


def rate_ratios(metric: MetricSpec) -> tuple[float, ...]:
    """The grid the metric's likelihood is kept on: the spec's decision points join the base grid."""
    test, compare = metric.sequential, metric.compare
    max_ratio = compare.max_ratio if compare is not None and compare.confidence is not None else None
    return sequential.grid(test.tolerance if test else None, test.margin if test else None, max_ratio)


def restart_cause(metric: MetricSpec, earlier: SequentialEvidence | None) -> str | None:
    """Why the evidence in status cannot go on (it restarts from the totals it last read), or None."""
    if earlier is None:
        return None
    if earlier.rate_ratios == rate_ratios(metric) and earlier.margin_increase == _margin_increase(metric):
        return None
    if not earlier.rate_ratios:
        return "the evidence was kept by an older operator, on another grid"
    return (
        "tolerance, margin, marginIncrease or maxRatio changed: evidence gathered under other bounds "
        "does not count"
    )


def _margin_increase(metric: MetricSpec) -> float | None:
    return metric.sequential.margin_increase if metric.sequential is not None else None


def accumulate(
    metric: MetricSpec, measured: MetricQuery, earlier: SequentialEvidence | None
) -> SequentialEvidence | None:
    """The evidence after this run's totals; unchanged when they are missing. The interval's counts
    are what the totals grew by since the previous reading; the first reading, and one in which a
    total went down (a counter reset), is only a baseline."""
    totals = _read_totals(measured)
    if totals is None:
        return earlier  # no data this interval: the test waits, it never guesses
    candidate, incumbent = totals
    grid = rate_ratios(metric)
    if earlier is not None and restart_cause(metric, earlier) is not None:
        earlier = _fresh(metric, earlier.candidate_totals, earlier.incumbent_totals)
    before = earlier or _fresh(metric, None, None)
    c_counts = _grown(before.candidate_totals, candidate)
    i_counts = _grown(before.incumbent_totals, incumbent)
    if c_counts is None or i_counts is None:
        # A baseline, or a reset on either side: the test weighs both sides' counts of one interval,
        # so the interval counts nothing on either (sequential.py says why that keeps alpha).
        c_counts = i_counts = sequential.Counts(0.0, 0.0)
    ratios = tuple(
        round(r, 6) for r in sequential.update(before.log_likelihood_ratios, grid, c_counts, i_counts)
    )
    evidence = SequentialEvidence(
        log_likelihood_ratios=ratios,
        rate_ratios=grid,
        log_evidence=round(sequential.log_evidence(ratios, grid, _tolerance(metric), above=True), 6),
        candidate_events=before.candidate_events + c_counts.events,
        candidate_requests=before.candidate_requests + c_counts.requests,
        incumbent_events=before.incumbent_events + i_counts.events,
        incumbent_requests=before.incumbent_requests + i_counts.requests,
        candidate_totals=CounterTotals(requests=candidate.requests, events=candidate.events),
        incumbent_totals=CounterTotals(requests=incumbent.requests, events=incumbent.events),
        margin_increase=before.margin_increase,
    )
    return evidence.model_copy(update={"bounds": confidence_bounds(metric, evidence)})


def confidence_bounds(metric: MetricSpec, evidence: SequentialEvidence) -> ConfidenceBounds:
    """The interval and e-values of the evidence, at the level of the metric's test."""
    alpha = _alpha(metric)
    ratios, grid = evidence.log_likelihood_ratios, evidence.rate_ratios
    interval = sequential.interval(ratios, grid, alpha)
    margin = metric.sequential.margin if metric.sequential else None
    compare = metric.compare
    increase = None
    if compare is not None and compare.confidence is not None and compare.max_increase is not None:
        increase = round(_increase_lower(evidence, alpha), 6)
    shown_within = None
    if metric.sequential is not None and metric.sequential.margin_increase is not None:
        shown_within = round(increase_upper(evidence, alpha), 6)
    return ConfidenceBounds(
        alpha=alpha,
        rate_ratio_lower=interval.lower,
        rate_ratio_upper=interval.upper,
        log_evidence=round(sequential.log_evidence(ratios, grid, _tolerance(metric), above=True), 6),
        log_margin_evidence=None
        if margin is None
        else round(sequential.log_evidence(ratios, grid, margin, above=False), 6),
        increase_lower=increase,
        increase_upper=shown_within,
    )


def judge_counts(
    metric: MetricSpec, evidence: SequentialEvidence | None, restarted: str | None
) -> Judgement | None:
    """Fail when the counts show harm; Inconclusive while a margin is not yet shown; None when the
    counts raise no objection (the metric's other rules decide)."""
    if not metric.counts_events:
        return None
    note = f" (the test restarted: {restarted})" if restarted else ""
    if evidence is None or evidence.bounds is None:
        if metric.sequential is not None and not _has_margin(metric.sequential):
            return None  # no evidence of harm: today's pass
        return Judgement(Verdict.INCONCLUSIVE, f"no counts read yet{note}")
    return _sequential(metric, evidence, note) or _compared(metric, evidence, note)


def _sequential(metric: MetricSpec, evidence: SequentialEvidence, note: str) -> Judgement | None:
    test = metric.sequential
    if test is None:
        return None
    ratios, grid, bounds = evidence.log_likelihood_ratios, evidence.rate_ratios, evidence.bounds
    counted = _counted(evidence)
    if sequential.fails(ratios, grid, test.tolerance, test.alpha):
        return Judgement(
            Verdict.FAIL,
            f"sequential test: the candidate's rate is above {test.tolerance:g} x the incumbent's "
            f"({_interval(bounds)}; {counted}){note}",
            BreachRule.SEQUENTIAL,
            test.tolerance,
            bounds,
        )
    if test.margin is not None and not sequential.passes(ratios, grid, test.margin, test.alpha):
        return Judgement(
            Verdict.INCONCLUSIVE,
            f"sequential test: not yet shown below the margin {test.margin:g} ({_interval(bounds)}; "
            f"{counted}){note}",
            bounds=bounds,
        )
    if test.margin_increase is not None:
        shown_within = increase_upper(evidence, test.alpha)
        if not shown_within < test.margin_increase:
            return Judgement(
                Verdict.INCONCLUSIVE,
                f"sequential test: the candidate's rate is at most {shown_within:.4g} above the "
                f"incumbent's, not yet below marginIncrease {test.margin_increase:g} ({counted}){note}",
                bounds=bounds,
            )
    return None


def increase_upper(evidence: SequentialEvidence, alpha: float) -> float:
    """The candidate's rate's upper bound minus the incumbent's lower bound, each at alpha/2: below the
    true difference with probability at most alpha, at every evaluation. The candidate's sequence puts
    half its prior on a rate of 0, so a side without events is bounded after log(4/alpha)/p requests
    (sequential.rate_bounds)."""
    _, candidate_upper = sequential.rate_bounds(
        evidence.candidate_events, evidence.candidate_requests, alpha / 2, at_zero=0.5
    )
    incumbent_lower, _ = sequential.rate_bounds(
        evidence.incumbent_events, evidence.incumbent_requests, alpha / 2
    )
    return candidate_upper - incumbent_lower


def zero_event_pass(test: SequentialTest, per_look: float) -> float | None:
    """The candidate requests counted when a service without events (on either side) first passes
    `test`, looked at every `per_look` candidate requests: 0 without a margin (nothing to show), None
    with a ratio margin (no events say nothing of a ratio, so it never passes: Inconclusive until
    progressDeadlines.inconclusive). `modelgate plan` and docs/statistics.md both print it."""
    if test.margin_increase is None:
        return None if test.margin is not None else 0.0
    looks = 1
    while not _shown_at_zero(test, looks * per_look):
        looks *= 2
    low, high = looks // 2, looks  # not shown at low (or low is 0), shown at high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if _shown_at_zero(test, middle * per_look) else (middle, high)
    return high * per_look


def _shown_at_zero(test: SequentialTest, requests: float) -> bool:
    assert test.margin_increase is not None
    evidence = SequentialEvidence(
        log_likelihood_ratios=(),
        log_evidence=0.0,
        candidate_events=0,
        candidate_requests=requests,
        incumbent_events=0,
        incumbent_requests=requests,
    )
    return increase_upper(evidence, test.alpha) < test.margin_increase


def _has_margin(test: SequentialTest) -> bool:
    return test.margin is not None or test.margin_increase is not None


def _compared(metric: MetricSpec, evidence: SequentialEvidence, note: str) -> Judgement | None:
    compare = metric.compare
    if compare is None or compare.confidence is None:
        return None
    alpha, bounds = _alpha(metric), evidence.bounds
    ratios, grid = evidence.log_likelihood_ratios, evidence.rate_ratios
    if compare.max_ratio is not None and sequential.fails(ratios, grid, compare.max_ratio, alpha):
        return Judgement(
            Verdict.FAIL,
            f"the candidate's rate is above {compare.max_ratio:g} x the incumbent's ({_interval(bounds)}; "
            f"{_counted(evidence)}){note}",
            BreachRule.MAX_RATIO,
            compare.max_ratio,
            bounds,
        )
    if compare.max_increase is not None:
        lowest_increase = _increase_lower(evidence, alpha)
        if lowest_increase > compare.max_increase:
            return Judgement(
                Verdict.FAIL,
                f"the candidate's rate is at least {lowest_increase:.4g} above the incumbent's, more than "
                f"{compare.max_increase:g} ({_counted(evidence)}){note}",
                BreachRule.MAX_INCREASE,
                compare.max_increase,
                bounds,
            )
    return None


def _increase_lower(evidence: SequentialEvidence, alpha: float) -> float:
    """The candidate's rate's lower bound minus the incumbent's upper bound, each at alpha/2: above the
    true difference with probability at most alpha, at every evaluation."""
    candidate_lower, _ = sequential.rate_bounds(
        evidence.candidate_events, evidence.candidate_requests, alpha / 2
    )
    _, incumbent_upper = sequential.rate_bounds(
        evidence.incumbent_events, evidence.incumbent_requests, alpha / 2
    )
    return candidate_lower - incumbent_upper


def _tolerance(metric: MetricSpec) -> float:
    if metric.sequential is not None:
        return metric.sequential.tolerance
    assert metric.compare is not None
    return metric.compare.max_ratio or 1.0


def _alpha(metric: MetricSpec) -> float:
    """Each counted rule's alpha; a comparison with both maxRatio and maxIncrease gives each rule half
    of its alpha, so that the pair's chance of a false rollback stays below it."""
    if metric.sequential is not None:
        return metric.sequential.alpha
    compare = metric.compare
    assert compare is not None and compare.confidence is not None
    both = compare.max_ratio is not None and compare.max_increase is not None
    return compare.confidence.alpha / 2 if both else compare.confidence.alpha


def _interval(bounds: ConfidenceBounds | None) -> str:
    if bounds is None:
        return "no bounds yet"
    lower = "0" if bounds.rate_ratio_lower is None else f"{bounds.rate_ratio_lower:.3g}"
    upper = "inf" if bounds.rate_ratio_upper is None else f"{bounds.rate_ratio_upper:.3g}"
    return f"rate ratio in ({lower}, {upper}), alpha {bounds.alpha:g}"


def _counted(evidence: SequentialEvidence) -> str:
    return (
        f"candidate {evidence.candidate_events:.0f}/{evidence.candidate_requests:.0f}, "
        f"incumbent {evidence.incumbent_events:.0f}/{evidence.incumbent_requests:.0f}"
    )


def _fresh(
    metric: MetricSpec, candidate: CounterTotals | None, incumbent: CounterTotals | None
) -> SequentialEvidence:
    grid = rate_ratios(metric)
    return SequentialEvidence(
        log_likelihood_ratios=(0.0,) * len(grid),
        rate_ratios=grid,
        margin_increase=_margin_increase(metric),
        log_evidence=0.0,
        candidate_events=0,
        candidate_requests=0,
        incumbent_events=0,
        incumbent_requests=0,
        candidate_totals=candidate,
        incumbent_totals=incumbent,
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
