"""Anytime-valid inference on counts (errors, aborts, refusals, slow requests): a confidence sequence
for theta, the candidate's event rate over the incumbent's, after Lindon & Malek, "Anytime-Valid
Inference for Multinomial Count Data" (NeurIPS 2022), and Lindon, Sanden & Shirikian, "Rapid
Regression Detection in Software Deployments through Sequential Testing" (KDD 2022).

Each evaluation brings, per side, the requests served and the events among them since the previous
one: what the side's cumulative counters grew by (`Counts.since`), so every event counts once and
whole. Given the interval's events, each is the candidate's with probability
q(theta) = rho*theta / (rho*theta + 1 - rho), rho the candidate's share of the interval's requests.
The state is log L(theta) - log L(1), the running conditional log likelihood, on a fixed grid of theta
(`grid`). For a true theta0, L(theta)/L(theta0) is a nonnegative martingale with mean 1, for every
theta; so is a weighted average over grid points above theta0 (a one-sided mixture, weighted toward
the ratios just above theta0: `log_harm_evidence`). By Ville's inequality it reaches
1/alpha with probability at most alpha, however often one looks and however the share changes:
theta0 is then "excluded from below" (theta > theta0). If the truth is below theta0 the mixture is a
supermartingale (each event's factor has mean below 1), so the same bound holds for every theta at or
below theta0. Likewise from above, with the points below theta0.

The decisions are one-sided tests at alpha each, as in equivalence testing (TOST): Fail when every
grid point up to the tolerance is excluded (the rate is higher than tolerance x the incumbent's:
wrong with probability at most alpha when it is not), Pass when every point from the margin up is
excluded (the rate is below margin x the incumbent's: wrong with probability at most alpha when it is
not). No truth can make both errors, so each rollout's chance of a wrong decision is at most alpha;
the two bounds together form a 1 - 2 alpha confidence sequence.

An interval in which a total went down (a pod restarted or left, taking its counts with it) counts
nothing on either side: its factor is 1. Whether it is left out depends on pods, not on how its
events split between the sides, so the martingales stay martingales. Leaving intervals out, or in,
because of their events would break them; so would counting an event twice, which is why the counts
are differences of totals rather than counts over a window.

The functions that simulations call in bulk (`advance`, `excluded_from_below`, `excluded_from_above`,
`fails`, `passes`, `log_harm_evidence`) take events and log ratios as floats or as arrays of many
runs (anything with `__array_namespace__`, e.g. numpy's), so tooling/sequential_sim.py and
tooling/statistics_sections.py run the operator's own code.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

# Rate ratios the mixtures spread their weight over, log-spaced from 0.1 to 10 (a factor of 1.21
# between neighbours), with 1.0 among them; a spec's tolerance and margin join them (`grid`).
BASE_GRID: tuple[float, ...] = tuple(round(10 ** (k / 12), 6) for k in range(-12, 13))


def grid(*decision_points: float | None) -> tuple[float, ...]:
    """The rate ratios a test keeps its likelihood at: the base grid and the ratios it decides at."""
    return tuple(sorted({*BASE_GRID, *(round(p, 6) for p in decision_points if p is not None)}))


@dataclass(frozen=True)
class Counts:
    """What one side served in an interval, and the events (errors, ...) among those requests."""

    requests: float
    events: float

    def since(self, earlier: Counts) -> Counts | None:
        """What cumulative totals (counters read at one evaluation) grew by since `earlier`; None
        when either went down, a counter reset: the interval counts nothing, `self` is the new
        baseline. Event totals are rounded before they are subtracted, so float noise neither
        accumulates over intervals nor turns one event into two."""
        requests, events = self.requests - earlier.requests, round(self.events) - round(earlier.events)
        if requests < 0 or events < 0:
            return None
        return Counts(requests, events)


def update(
    log_ratios: Sequence[float], rate_ratios: Sequence[float], candidate: Counts, incumbent: Counts
) -> tuple[float, ...]:
    """The running log likelihoods (log L(theta) - log L(1), one per rate ratio, all 0.0 at the
    start) after one interval. An interval without events, or without requests on either side, says
    nothing. Event counts are whole numbers: float noise (2.9999999) counts as the event it is."""
    if not log_ratios:
        log_ratios = (0.0,) * len(rate_ratios)
    events_c, events_i = round(max(candidate.events, 0.0)), round(max(incumbent.events, 0.0))
    if events_c + events_i == 0 or candidate.requests <= 0 or incumbent.requests <= 0:
        return tuple(log_ratios)
    rho = candidate.requests / (candidate.requests + incumbent.requests)
    return advance(log_ratios, rate_ratios, rho, events_c, events_c + events_i)


def advance(
    log_ratios: Sequence[Any], rate_ratios: Sequence[float], rho: float, events_c: Any, events: Any
) -> tuple[Any, ...]:
    """One interval's conditional likelihood, given the candidate's share rho of its requests (0 < rho
    < 1), the candidate's events and both sides' events: per theta,
    events_c * log(q/rho) + (events - events_c) * log((1-q)/(1-rho)), which is
    events_c * log(theta) - events * log(rho*theta + 1 - rho)."""
    return tuple(
        log_ratio + events_c * math.log(theta) - events * math.log(rho * theta + 1 - rho)
        for theta, log_ratio in zip(rate_ratios, log_ratios, strict=True)
    )


# The fail side's prior (a truncated mixture over the ratios above the one tested): ratios up to
# HARM_NEAR times it weigh HARM_NEAR_WEIGHT times as much as those beyond. Chosen by seeded simulation
# (docs/statistics.md): against uniform weights up to 10x it catches 1.5x and 2x regressions 10 to 15%
# sooner at the median and 5x no later; weights only up to 4x would miss 5x's first interval.
HARM_NEAR, HARM_NEAR_WEIGHT = 4.0, 4.0


def excluded_from_below(
    log_ratios: Sequence[Any],
    rate_ratios: Sequence[float],
    alpha: float,
    near_weight: float = HARM_NEAR_WEIGHT,
    upto: float = math.inf,
) -> list[Any]:
    """Per grid point theta_j up to `upto`: whether the one-sided mixture of L(theta)/L(theta_j) over
    the points above it (`log_harm_evidence`) has reached 1/alpha, i.e. the rate ratio is above
    theta_j (the last point never is)."""
    bar, last, ops = math.log(1 / alpha), len(log_ratios) - 1, array_ops(*log_ratios)
    return [
        j < last and _log_harm(log_ratios, rate_ratios, j, near_weight, ops) >= bar
        for j, theta in enumerate(rate_ratios)
        if theta <= upto
    ]


def log_harm_evidence(
    log_ratios: Sequence[Any], rate_ratios: Sequence[float], j: int, near_weight: float = HARM_NEAR_WEIGHT
) -> Any:
    """The log of the e-value against "the rate ratio is at most theta_j": the weighted mean of
    L(theta)/L(theta_j) over the grid points above it (near_weight 1: uniform, as the test was
    before). Each term is a martingale at theta_j and a supermartingale below it, so any fixed
    weights keep alpha; 0.0 at the last point (no points above)."""
    return _log_harm(log_ratios, rate_ratios, j, near_weight, array_ops(*log_ratios))


def _log_harm(
    log_ratios: Sequence[Any], rate_ratios: Sequence[float], j: int, near_weight: float, ops: Any
) -> Any:
    log_weights = _log_harm_weights(tuple(rate_ratios), j, near_weight)
    if not log_weights:
        return 0.0
    terms = [log_ratios[k] + w for k, w in enumerate(log_weights, start=j + 1)]
    return log_sum_exp(ops, terms) - log_ratios[j]


@functools.lru_cache(maxsize=4096)  # bounded: each spec's margins make a grid of its own
def _log_harm_weights(rate_ratios: tuple[float, ...], j: int, near_weight: float) -> tuple[float, ...]:
    """The log of each grid point's weight above theta_j in the fail side's prior (asked for at
    every evaluation of the same grid: kept)."""
    above = range(j + 1, len(rate_ratios))
    weights = [near_weight if rate_ratios[k] <= HARM_NEAR * rate_ratios[j] else 1.0 for k in above]
    total = sum(weights)
    return tuple(math.log(weight / total) for weight in weights)


def excluded_from_above(log_ratios: Sequence[Any], alpha: float) -> list[Any]:
    """Per grid point: whether the rate ratio is below it, by the uniform mixture over the points
    below. Walks the points up, keeping the log of the sum of the L(theta) already passed."""
    ops = array_ops(*log_ratios)
    bar = math.log(1 / alpha)
    excluded: list[Any] = [False] * len(log_ratios)
    passed, count = -math.inf, 0
    for j in range(len(log_ratios)):
        if count:
            excluded[j] = passed - math.log(count) - log_ratios[j] >= bar
        passed, count = ops.logaddexp(passed, log_ratios[j]), count + 1
    return excluded


def fails(
    log_ratios: Sequence[Any],
    rate_ratios: Sequence[float],
    tolerance: float,
    alpha: float,
    near_weight: float = HARM_NEAR_WEIGHT,
) -> Any:
    """The whole sequence lies above `tolerance`: every grid point up to it is excluded from below."""
    return _all(
        excluded_from_below(_started(log_ratios, rate_ratios), rate_ratios, alpha, near_weight, tolerance)
    )


def passes(log_ratios: Sequence[Any], rate_ratios: Sequence[float], margin: float, alpha: float) -> Any:
    """The whole sequence lies below `margin`: every grid point from it up is excluded from above."""
    above = excluded_from_above(_started(log_ratios, rate_ratios), alpha)
    return _all(excluded for theta, excluded in zip(rate_ratios, above, strict=True) if theta >= margin)


def _started(log_ratios: Sequence[Any], rate_ratios: Sequence[float]) -> Sequence[Any]:
    return log_ratios or (0.0,) * len(rate_ratios)


def _all(flags: Iterable[Any]) -> Any:
    result: Any = True
    for flag in flags:
        result = result & flag
    return result


@dataclass(frozen=True)
class Interval:
    """Where the rate ratio lies, as far as the evidence shows: above `lower` and below `upper`, each
    a one-sided bound at level alpha (None: not bounded on that side yet)."""

    lower: float | None
    upper: float | None


def interval(log_ratios: Sequence[float], rate_ratios: Sequence[float], alpha: float) -> Interval:
    """The largest grid point with every point up to it excluded from below, and the smallest with
    every point from it up excluded from above."""
    log_ratios = _started(log_ratios, rate_ratios)
    lower = upper = None
    for theta, excluded in zip(rate_ratios, excluded_from_below(log_ratios, rate_ratios, alpha), strict=True):
        if not excluded:
            break
        lower = theta
    pairs = zip(rate_ratios, excluded_from_above(log_ratios, alpha), strict=True)
    for theta, excluded in reversed(list(pairs)):
        if not excluded:
            break
        upper = theta
    return Interval(lower, upper)


def log_evidence(
    log_ratios: Sequence[float], rate_ratios: Sequence[float], theta0: float, above: bool
) -> float:
    """The log of the mixture (an e-value) against "the rate ratio is theta0 or less" (above=True,
    the fail side's weighted mixture) or "theta0 or more" (the mean of L(theta)/L(theta0) over the grid
    points below); 0.0 before any data. In logs: the ratios overflow a float long before the test is
    done."""
    if not log_ratios:
        return 0.0
    at = min(range(len(rate_ratios)), key=lambda j: abs(rate_ratios[j] - theta0))
    if above:
        return float(log_harm_evidence(log_ratios, rate_ratios, at))
    side = [r for theta, r in zip(rate_ratios, log_ratios, strict=True) if theta < theta0]
    if not side:
        return 0.0
    top = max(side)
    return top + math.log(sum(math.exp(r - top) for r in side) / len(side)) - log_ratios[at]


def rate_bounds(events: float, requests: float, alpha: float, at_zero: float = 0.0) -> tuple[float, float]:
    """An anytime-valid confidence sequence for one side's event rate from its cumulative counts
    (Robbins' mixture: a Jeffreys Beta(1/2, 1/2) mixture of binomial likelihood ratios, which reaches
    1/alpha at the true rate with probability at most alpha): the rates where it stays below.
    `at_zero`: the prior's weight on a rate of exactly 0, the rest Jeffreys'. With a half there, a side
    without events has its upper bound below p once (1 - p)^requests <= alpha/2, after about
    log(2/alpha)/p requests, where Jeffreys' alone needs about twice as many; one event ends it."""
    if requests <= 0:
        return 0.0, 1.0
    events = min(max(round(events), 0), requests)
    misses = requests - events
    mixture = math.log1p(-at_zero) + _log_beta(0.5 + events, 0.5 + misses) - _log_beta(0.5, 0.5)
    if events == 0 and at_zero > 0:
        mixture = ScalarOps.logaddexp(math.log(at_zero), mixture)
    bar = math.log(1 / alpha) - mixture
    lower = 0.0 if events == 0 else math.exp(_excluded_log_end(events, misses, bar))
    # log(1 - upper) is found; expm1 keeps the digits of an upper bound near 0.
    upper = 1.0 if misses == 0 else -math.expm1(_excluded_log_end(misses, events, bar))
    return lower, upper


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


# Newton's steps shrink quadratically: a handful reach a double's precision; the cap is a guard.
_NEWTON_STEPS = 100
_NEWTON_TOLERANCE = 1e-15


def _excluded_log_end(near: float, far: float, bar: float) -> float:
    """log r of the largest rate r below near / (near + far) whose -log likelihood (near events at
    r, far at 1 - r) is at least `bar`: the bound on r's side, itself excluded. Newton's method in u = log r,
    where that -log likelihood is convex and falls towards the estimate, so iterates started below
    the root rise to it without passing it; a few ulps of rounding are then stepped back."""

    def excess(u: float) -> float:
        misses = far * _log1m_exp(u) if far else 0.0  # 0 x log 0 is 0 here
        return -(near * u + misses) - bar

    estimate = math.log(near / (near + far))
    if excess(estimate) >= 0:  # every rate on this side is excluded
        return estimate
    u = min(-bar / near, estimate) - 1.0  # there excess > near: below the root
    for _ in range(_NEWTON_STEPS):
        rate = math.exp(u)
        step = excess(u) / (far * rate / (1.0 - rate) - near)
        u -= step
        if abs(step) <= _NEWTON_TOLERANCE * abs(u):
            break
    while excess(u) < 0:
        u = math.nextafter(u, -math.inf)
    return u


def _log1m_exp(u: float) -> float:
    """log(1 - e^u) for u < 0, to a double's precision on both sides of -log 2 (Maechler 2012)."""
    return math.log(-math.expm1(u)) if u > -math.log(2) else math.log1p(-math.exp(u))


class ScalarOps:
    """What the array namespace gives arrays, for floats."""

    exp = staticmethod(math.exp)
    log = staticmethod(math.log)
    maximum = staticmethod(max)

    @staticmethod
    def logaddexp(a: float, b: float) -> float:
        top = max(a, b)
        if top == -math.inf:
            return top
        return top + math.log(math.exp(a - top) + math.exp(b - top))


def array_ops(*values: Any) -> Any:
    """The array namespace of the values (numpy for numpy arrays, by the array API), or floats'."""
    for value in values:
        if hasattr(value, "__array_namespace__"):
            return value.__array_namespace__()
    return ScalarOps


def log_sum_exp(ops: Any, terms: Sequence[Any]) -> Any:
    """log(sum(exp(terms))) of finite terms, shifted by their maximum so that nothing overflows."""
    top = functools.reduce(ops.maximum, terms)
    return top + ops.log(sum(ops.exp(term - top) for term in terms))
