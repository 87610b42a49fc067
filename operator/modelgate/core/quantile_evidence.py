"""Judging a latency quantile on its histogram's bucket counts since the rollout began
(core/quantile_bounds.py): compare.confidence on ttftP50, ttftP99, tpotP99 or latencyP99. Fail when
the candidate's quantile is, with confidence, above maxRatio x the incumbent's; with a margin, Pass
only once it is below margin x the incumbent's. Pure functions of the spec and the evidence in status,
so `modelgate plan` and the tests call exactly what the operator does.

Each side's counts are what its histogram grew by between evaluations (`BucketReading`), so every
request counts once; a side whose counts went down (a pod restarted or left) counts nothing in that
interval and its reading is the new baseline. The tests are per side, so leaving out one side's
interval, for a reason that is not its latencies, keeps each side's bounds valid."""

from __future__ import annotations

import math
from dataclasses import dataclass

from modelgate.api import (
    LATENCY_QUANTILES,
    BreachRule,
    BucketReading,
    MetricSpec,
    QuantileBounds,
    QuantileEvidence,
    Verdict,
)
from modelgate.core import quantile_bounds
from modelgate.core.judgement import Judgement
from modelgate.core.results import MetricQuery, SideBuckets


@dataclass(frozen=True)
class _Read:
    """One side's histogram as read now: the total, and the count at each boundary it has."""

    total: float
    within: dict[float, float]


def accumulate(
    metric: MetricSpec, measured: MetricQuery, earlier: QuantileEvidence | None
) -> QuantileEvidence | None:
    """The evidence after this run's readings; unchanged when a side's histogram was not read. The
    first reading is only a baseline, on the boundaries both sides have."""
    read = _read(measured)
    if read is None:
        return earlier
    candidate, incumbent = read
    if earlier is None or earlier.candidate_reading is None or earlier.incumbent_reading is None:
        grid = tuple(sorted(set(candidate.within) & set(incumbent.within)))
        if not grid:
            return earlier
        earlier = _fresh(grid, _reading(grid, candidate), _reading(grid, incumbent))
    grid = earlier.boundaries
    if any(bound not in side.within for side in read for bound in grid):
        # Every query answered, yet a boundary has no series: another histogram (the preset was
        # edited) or another server's grid. Counts on other boundaries do not go on: a new baseline.
        return accumulate(metric, measured, None)
    c_reading, i_reading = _reading(grid, candidate), _reading(grid, incumbent)
    c_grown, i_grown = (
        _grown(earlier.candidate_reading, c_reading),
        _grown(earlier.incumbent_reading, i_reading),
    )
    evidence = earlier.model_copy(
        update={
            "candidate_requests": earlier.candidate_requests + c_grown[0],
            "incumbent_requests": earlier.incumbent_requests + i_grown[0],
            "candidate_exceeding": _added(earlier.candidate_exceeding, c_grown[1]),
            "incumbent_exceeding": _added(earlier.incumbent_exceeding, i_grown[1]),
            "candidate_reading": c_reading,
            "incumbent_reading": i_reading,
        }
    )
    return evidence.model_copy(update={"bounds": bounds_of(metric, evidence)})


def bounds_of(metric: MetricSpec, evidence: QuantileEvidence) -> QuantileBounds:
    """Each side's quantile bounds at half of the comparison's alpha."""
    alpha, quantile = side_alpha(metric), LATENCY_QUANTILES[metric.preset or ""]
    grid = evidence.boundaries
    candidate = quantile_bounds.bounds(
        grid, evidence.candidate_exceeding, evidence.candidate_requests, quantile, alpha
    )
    incumbent = quantile_bounds.bounds(
        grid, evidence.incumbent_exceeding, evidence.incumbent_requests, quantile, alpha
    )
    return QuantileBounds(
        alpha=alpha,
        quantile=quantile,
        candidate_lower=candidate.lower,
        candidate_upper=candidate.upper,
        incumbent_lower=incumbent.lower,
        incumbent_upper=incumbent.upper,
    )


def side_alpha(metric: MetricSpec) -> float:
    """Each side's bounds get half of alpha: a wrong decision needs one of the two to be wrong."""
    assert metric.compare is not None and metric.compare.confidence is not None
    return metric.compare.confidence.alpha / 2


def judge(metric: MetricSpec, evidence: QuantileEvidence | None) -> Judgement | None:
    """Fail when the bounds show the candidate slower than maxRatio allows; with a margin, Pass once
    they show it within the margin, Inconclusive until then; None when they raise no objection."""
    if not metric.bounds_quantile:
        return None
    if evidence is None or evidence.bounds is None:
        return Judgement(
            Verdict.INCONCLUSIVE, "no histogram counts read yet (the first reading is a baseline)"
        )
    compare, found = metric.compare, evidence.bounds
    assert compare is not None and compare.confidence is not None
    seen = _seen(found, evidence)
    ratio, lower, upper = compare.max_ratio, found.candidate_lower, found.incumbent_upper
    if (
        ratio is not None
        and lower is not None
        and upper is not None
        and quantile_bounds.at_least(lower, ratio, upper)
    ):
        return Judgement(
            Verdict.FAIL,
            f"the candidate's {_quantile(found)} is above {ratio:g} x the incumbent's ({seen})",
            BreachRule.MAX_RATIO,
            ratio,
            quantile_bounds=found,
        )
    margin = compare.confidence.margin
    if margin is None:
        return None
    lower, upper = found.incumbent_lower, found.candidate_upper
    if lower is not None and upper is not None and quantile_bounds.at_most_times(upper, margin, lower):
        return Judgement(
            Verdict.PASS,
            f"the candidate's {_quantile(found)} is below {margin:g} x the incumbent's ({seen})",
            quantile_bounds=found,
        )
    return Judgement(
        Verdict.INCONCLUSIVE,
        f"not yet shown below {margin:g} x the incumbent's {_quantile(found)} ({seen})",
        quantile_bounds=found,
    )


def _quantile(found: QuantileBounds) -> str:
    return f"P{found.quantile * 100:g}"


def _seen(found: QuantileBounds, evidence: QuantileEvidence) -> str:
    return (
        f"candidate in {_interval(found.candidate_lower, found.candidate_upper)} over "
        f"{evidence.candidate_requests:.0f} requests, incumbent in "
        f"{_interval(found.incumbent_lower, found.incumbent_upper)} over {evidence.incumbent_requests:.0f}; "
        f"alpha {found.alpha:g} each"
    )


def _interval(lower: float | None, upper: float | None) -> str:
    return f"({0 if lower is None else lower:g}, {'inf' if upper is None else f'{upper:g}'}]s"


def _read(measured: MetricQuery) -> tuple[_Read, _Read] | None:
    if measured.buckets is None:
        return None
    sides = tuple(_side(side) for side in measured.buckets)
    candidate, incumbent = sides
    return None if candidate is None or incumbent is None else (candidate, incumbent)


def _side(side: SideBuckets) -> _Read | None:
    """The side's reading; None when a query failed or the total is not a count (no data)."""
    total = side.total.value
    if total is None or not math.isfinite(total) or total < 0:
        return None
    if any(result.error is not None for _, result in side.within):
        return None
    within = {
        bound: float(round(result.value))
        for bound, result in side.within
        if result.value is not None and math.isfinite(result.value) and result.value >= 0
    }
    return _Read(float(round(total)), within)


def _reading(grid: tuple[float, ...], read: _Read) -> BucketReading:
    return BucketReading(total=read.total, within=tuple(min(read.within[b], read.total) for b in grid))


def _grown(before: BucketReading | None, now: BucketReading) -> tuple[float, tuple[float, ...]]:
    """The requests a side's histogram grew by, and those among them above each boundary; nothing
    when a count went down (a counter reset). Readings of one evaluation are separate queries, so a
    scrape between two of them can put a boundary ahead of the total: clipped at zero."""
    zero = (0.0, (0.0,) * len(now.within))
    if before is None:
        return zero
    requests = now.total - before.total
    within = [n - b for n, b in zip(now.within, before.within, strict=True)]
    if requests < 0 or any(grown < 0 for grown in within):
        return zero
    return requests, tuple(max(requests - grown, 0.0) for grown in within)


def _added(counts: tuple[float, ...], grown: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(c + g for c, g in zip(counts, grown, strict=True))


def _fresh(grid: tuple[float, ...], candidate: BucketReading, incumbent: BucketReading) -> QuantileEvidence:
    zeros = (0.0,) * len(grid)
    return QuantileEvidence(
        boundaries=grid,
        candidate_requests=0,
        incumbent_requests=0,
        candidate_exceeding=zeros,
        incumbent_exceeding=zeros,
        candidate_reading=candidate,
        incumbent_reading=incumbent,
    )
