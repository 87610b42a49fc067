"""Judging a latency quantile on its histogram's bucket counts since the rollout began
(core/latency.py): compare.confidence on ttftP50, ttftP99, tpotP99 or latencyP99. Fail when
the candidate's quantile is, with confidence, above maxRatio x the incumbent's; with a margin, Pass
only once it is below margin x the incumbent's. Pure functions of the spec and the evidence in status,
so `modelgate plan` and the tests call exactly what the operator does.

Each side's counts are what its histogram grew by between evaluations (`BucketReading`), so every
request counts once; a side whose counts went down (a pod restarted or left) counts nothing in that
interval and its reading is the new baseline. The tests are per side, so leaving out one side's
interval, for a reason that is not its latencies, keeps each side's bounds valid.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.api import (
    LATENCY_QUANTILES,
    BreachRule,
    BucketReading,
    MetricSpec,
    QuantileBounds,
    QuantileEvidence,
    Verdict,
)
from modelgate.core.results import Judgement, MetricQuery, SideBuckets
from modelgate.core.sequential import array_ops, log_sum_exp

# -- quantile_evidence -----------------------------------------------------------------------------


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
    candidate = bounds(grid, evidence.candidate_exceeding, evidence.candidate_requests, quantile, alpha)
    incumbent = bounds(grid, evidence.incumbent_exceeding, evidence.incumbent_requests, quantile, alpha)
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


def judge(metric: MetricSpec, evidence: QuantileEvidence | None, measured: MetricQuery) -> Judgement | None:
    """Fail when the bounds show the candidate slower than maxRatio allows; with a margin, Pass once
    they show it within the margin, Inconclusive until then; None when they raise no objection."""
    if not metric.bounds_quantile:
        return None
    if evidence is None or evidence.bounds is None:
        return Judgement(Verdict.INCONCLUSIVE, _unread(measured))
    compare, found = metric.compare, evidence.bounds
    assert compare is not None and compare.confidence is not None
    seen = _seen(found, evidence)
    ratio, lower, upper = compare.max_ratio, found.candidate_lower, found.incumbent_upper
    if ratio is not None and lower is not None and upper is not None and at_least(lower, ratio, upper):
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
    if lower is not None and upper is not None and at_most_times(upper, margin, lower):
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


def _unread(measured: MetricQuery) -> str:
    """Why there is no evidence: nothing read yet, or both sides read without a boundary in common
    (a server whose buckets are none that the preset reads: waiting would never bring any)."""
    read = _read(measured)
    if read is not None and not set(read[0].within) & set(read[1].within):
        return (
            "the two sides' histograms have no bucket boundary in common with the preset's grid, so "
            "compare.confidence cannot bound their quantiles; compare without confidence, or use a "
            "server that exports the grid (docs/statistics.md)"
        )
    return "no histogram counts read yet (the first reading is a baseline)"


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


# -- quantile_bounds -------------------------------------------------------------------------------
# Anytime-valid bounds on a latency quantile from a histogram's cumulative bucket counts, after Howard &
# Ramdas, "Sequential estimation of quantiles with applications to A/B-testing and best-arm identification"
# (Bernoulli 2022).
#
# A histogram counts, at each bucket boundary b, the requests that took at most b; the requests above b are a
# count too, and each request is above b with probability p_b = P(X > b). The q-quantile Q is above b exactly
# when p_b > 1 - q, and at most b when p_b <= 1 - q. So one test per boundary of "p_b <= p0" (p0 = 1 - q)
# against "p_b > p0" bounds the quantile from below, and one of "p_b >= p0" bounds it from above, at the
# grid's resolution: a quantile between two boundaries is bounded by the boundaries around it, never closer.
#
# Each test is a mixture of binomial likelihood ratios L(p)/L(p0) over alternatives p on its side
# (`_alternatives`, evenly spaced in log-odds): under p0 each ratio is a nonnegative martingale with mean 1,
# and for a truth beyond p0 on the other side a supermartingale; by Ville's inequality the mixture reaches
# 1/alpha with probability at most alpha, however often it is looked at.
#
# No union over boundaries is paid: the exceedance counts fall as b rises, and each test's evidence rises with
# its count, so "confidently above" holds for a prefix of the boundaries and "confidently at most" for a
# suffix. The lower bound is wrong only if the test at one boundary fixed by the truth (the first b with p_b
# <= p0) rejected, which has probability at most alpha; likewise the upper.
#
# A comparison splits alpha between the sides: Fail when the candidate's lower bound is at least maxRatio x
# the incumbent's upper bound (then Q_c > L_c >= maxRatio U_i >= maxRatio Q_i unless one of two bounds at
# alpha/2 is wrong); Pass when the candidate's upper bound is at most margin x the incumbent's lower bound.
# Each wrong decision has probability at most alpha.
#
# The functions a simulation calls in bulk (`evidence`, `above`, `at_most`, `fails`, `passes`) take counts as
# floats or as arrays of many runs (anything with `__array_namespace__`, e.g. numpy's), so
# tooling/latency_sim.py runs the operator's own code.


# The alternatives of each test: STEPS points STEP apart in log-odds from p0, on its side.
STEP, STEPS = 0.25, 20
# Boundaries compare as equal within this relative difference (0.06 is 1.5 x 0.04).
_RELATIVE = 1e-9


def _alternatives(p0: float, higher: bool) -> tuple[float, ...]:
    logit = math.log(p0 / (1 - p0))
    sign = 1 if higher else -1
    return tuple(1 / (1 + math.exp(-(logit + sign * STEP * j))) for j in range(1, STEPS + 1))


def evidence(exceeding: Any, requests: Any, p0: float, higher: bool) -> Any:
    """The log of the mixture e-value against "p <= p0" (higher=True) or "p >= p0", from the
    requests counted and those among them above the boundary; 0.0 before any."""
    ops = array_ops(exceeding, requests)
    terms = [
        exceeding * math.log(p / p0) + (requests - exceeding) * math.log((1 - p) / (1 - p0))
        for p in _alternatives(p0, higher)
    ]
    return log_sum_exp(ops, terms) - math.log(len(terms))


def above(exceeding: Sequence[Any], requests: Any, quantile: float, alpha: float) -> list[Any]:
    """Per boundary (ascending): whether the quantile is shown above it. A prefix: a boundary counts
    only when every one below it does too."""
    bar, flags, running = math.log(1 / alpha), [], True
    for count in exceeding:
        running = running & (evidence(count, requests, 1 - quantile, higher=True) >= bar)
        flags.append(running)
    return flags


def at_most(exceeding: Sequence[Any], requests: Any, quantile: float, alpha: float) -> list[Any]:
    """Per boundary (ascending): whether the quantile is shown to be at most it. A suffix."""
    bar, flags, running = math.log(1 / alpha), [], True
    for count in reversed(exceeding):
        running = running & (evidence(count, requests, 1 - quantile, higher=False) >= bar)
        flags.append(running)
    return flags[::-1]


def fails(
    candidate_above: Sequence[Any], incumbent_at_most: Sequence[Any], grid: Sequence[float], max_ratio: float
) -> Any:
    """Some boundary the candidate's quantile is above is at least max_ratio x one the incumbent's is
    at most: the candidate's quantile is above max_ratio x the incumbent's."""
    pairs = [(c, i) for c in grid for i in grid if at_least(c, max_ratio, i)]
    return _some_pair(candidate_above, incumbent_at_most, grid, pairs)


def passes(
    candidate_at_most: Sequence[Any], incumbent_above: Sequence[Any], grid: Sequence[float], margin: float
) -> Any:
    """Some boundary the candidate's quantile is at most is at most margin x one the incumbent's is
    above: the candidate's quantile is below margin x the incumbent's."""
    pairs = [(c, i) for c in grid for i in grid if at_most_times(c, margin, i)]
    return _some_pair(candidate_at_most, incumbent_above, grid, pairs)


def at_least(bound: float, ratio: float, other: float) -> bool:
    """bound >= ratio x other, boundaries being decimals written as floats (0.06 is 1.5 x 0.04)."""
    return bound >= ratio * other * (1 - _RELATIVE)


def at_most_times(bound: float, ratio: float, other: float) -> bool:
    """bound <= ratio x other, likewise."""
    return bound <= ratio * other * (1 + _RELATIVE)


def _some_pair(
    candidate: Sequence[Any],
    incumbent: Sequence[Any],
    grid: Sequence[float],
    pairs: list[tuple[float, float]],
) -> Any:
    at = {bound: index for index, bound in enumerate(grid)}
    result: Any = False
    for c, i in pairs:
        result = result | (candidate[at[c]] & incumbent[at[i]])
    return result


@dataclass(frozen=True)
class Bounds:
    """Where one side's quantile lies, as far as its counts show (seconds): above `lower` (None: not
    shown above any boundary) and at most `upper` (None: not shown at most any)."""

    lower: float | None
    upper: float | None


def bounds(
    grid: Sequence[float], exceeding: Sequence[float], requests: float, quantile: float, alpha: float
) -> Bounds:
    """The largest boundary the quantile is shown above, and the smallest it is shown at most."""
    shown_above = above(exceeding, requests, quantile, alpha)
    shown_at_most = at_most(exceeding, requests, quantile, alpha)
    lower = max((b for b, flag in zip(grid, shown_above, strict=True) if flag), default=None)
    upper = min((b for b, flag in zip(grid, shown_at_most, strict=True) if flag), default=None)
    return Bounds(lower, upper)
