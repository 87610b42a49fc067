"""Anytime-valid bounds on a latency quantile from a histogram's cumulative bucket counts, after
Howard & Ramdas, "Sequential estimation of quantiles with applications to A/B-testing and best-arm
identification" (Bernoulli 2022).

A histogram counts, at each bucket boundary b, the requests that took at most b; the requests above
b are a count too, and each request is above b with probability p_b = P(X > b). The q-quantile Q is
above b exactly when p_b > 1 - q, and at most b when p_b <= 1 - q. So one test per boundary of
"p_b <= p0" (p0 = 1 - q) against "p_b > p0" bounds the quantile from below, and one of "p_b >= p0"
bounds it from above, at the grid's resolution: a quantile between two boundaries is bounded by the
boundaries around it, never closer.

Each test is a mixture of binomial likelihood ratios L(p)/L(p0) over alternatives p on its side
(`_alternatives`, evenly spaced in log-odds): under p0 each ratio is a nonnegative martingale with
mean 1, and for a truth beyond p0 on the other side a supermartingale; by Ville's inequality the
mixture reaches 1/alpha with probability at most alpha, however often it is looked at.

No union over boundaries is paid: the exceedance counts fall as b rises, and each test's evidence
rises with its count, so "confidently above" holds for a prefix of the boundaries and "confidently
at most" for a suffix. The lower bound is wrong only if the test at one boundary fixed by the truth
(the first b with p_b <= p0) rejected, which has probability at most alpha; likewise the upper.

A comparison splits alpha between the sides: Fail when the candidate's lower bound is at least
maxRatio x the incumbent's upper bound (then Q_c > L_c >= maxRatio U_i >= maxRatio Q_i unless one of
two bounds at alpha/2 is wrong); Pass when the candidate's upper bound is at most margin x the
incumbent's lower bound. Each wrong decision has probability at most alpha.

The functions a simulation calls in bulk (`evidence`, `above`, `at_most`, `fails`, `passes`) take
counts as floats or as arrays of many runs (anything with `__array_namespace__`, e.g. numpy's), so
tooling/latency_sim.py runs the operator's own code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
    ops = _ops(exceeding, requests)
    terms = [
        exceeding * math.log(p / p0) + (requests - exceeding) * math.log((1 - p) / (1 - p0))
        for p in _alternatives(p0, higher)
    ]
    top = terms[0]
    for term in terms[1:]:
        top = ops.maximum(top, term)
    total = sum(ops.exp(term - top) for term in terms)
    return top + ops.log(total) - math.log(len(terms))


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


class _ScalarOps:
    exp = staticmethod(math.exp)
    log = staticmethod(math.log)
    maximum = staticmethod(max)


def _ops(*values: Any) -> Any:
    """The array namespace of the values (numpy for numpy arrays, by the array API), or floats'."""
    for value in values:
        if hasattr(value, "__array_namespace__"):
            return value.__array_namespace__()
    return _ScalarOps
