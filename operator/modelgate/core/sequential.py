"""An anytime-valid sequential test of "the candidate's event rate is higher than the incumbent's"
on counts (errors, aborts, refusals, slow requests), after Lindon & Malek, "Anytime-Valid Inference
for Multinomial Count Data" (NeurIPS 2022), and Lindon, Sanden & Shirikian, "Rapid Regression
Detection in Software Deployments through Sequential Testing" (KDD 2022).

Each evaluation brings, per side, the requests served and the events among them since the previous
one: what the side's cumulative counters grew by (`Counts.since`), so every event counts once and
whole. Given the interval's events, under the null (equal rates) each event is the candidate's with
probability rho = its share of the interval's requests; if the candidate's rate is theta times the
incumbent's, with q = rho*theta / (rho*theta + 1 - rho). The likelihood ratio of the interval is
(q/rho)^e_c * ((1-q)/(1-rho))^e_i, and its running product, for each theta, is a nonnegative
martingale with mean 1 under the null. Their average over a grid of theta > 1 (a mixture) is too, so
by Ville's inequality it exceeds 1/alpha with probability at most alpha, however often one looks and
however the traffic share changes: the test rejects, and the rollout rolls back, at the first
evaluation where it does.

An interval in which a total went down (a pod restarted or left, taking its counts with it) counts
nothing on either side: what it served is unknown. Its factor in the product is then 1. Whether an
interval is left out depends on pods restarting or leaving, not on how its events split between the
sides, so every factor still has mean 1 given the past under the null, the product stays a
martingale, and alpha holds. Leaving intervals out, or in, because of their events would break it;
so would counting an event twice, which is why the counts are differences of totals rather than
counts over a window (Prometheus's increase() extrapolates a window's samples to its edges).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Rate ratios the mixture spreads its weight over (log-spaced 1.1 .. 10): a regression of 10% is
# detected, slowly; a tenfold one quickly. Changing the grid changes what a stored state means.
GRID: tuple[float, ...] = tuple(
    round(math.exp(math.log(1.1) + i * math.log(10 / 1.1) / 15), 4) for i in range(16)
)


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


def update(log_ratios: Sequence[float], candidate: Counts, incumbent: Counts) -> tuple[float, ...]:
    """The running log likelihood ratios (one per GRID value, all 0.0 at the start) after one
    interval. An interval without events, or without requests on either side, says nothing. Event
    counts are whole numbers: each is rounded, so float noise in a difference of totals (e.g.
    2.9999999) counts as the event it is, never as a fraction of one."""
    events_c, events_i = round(max(candidate.events, 0.0)), round(max(incumbent.events, 0.0))
    requests = candidate.requests + incumbent.requests
    if not log_ratios:
        log_ratios = (0.0,) * len(GRID)
    if events_c + events_i == 0 or candidate.requests <= 0 or incumbent.requests <= 0 or requests <= 0:
        return tuple(log_ratios)
    rho = candidate.requests / requests
    updated = []
    for theta, log_ratio in zip(GRID, log_ratios, strict=True):
        q = rho * theta / (rho * theta + 1 - rho)
        updated.append(log_ratio + events_c * math.log(q / rho) + events_i * math.log((1 - q) / (1 - rho)))
    return tuple(updated)


def log_evidence(log_ratios: Sequence[float]) -> float:
    """The log of the mixture (an e-value): of the average likelihood ratio over the grid; 0.0
    before any data. Computed in logs: the ratios overflow a float long before the test is done."""
    if not log_ratios:
        return 0.0
    top = max(log_ratios)
    return top + math.log(sum(math.exp(r - top) for r in log_ratios) / len(log_ratios))


def rejects(log_ratios: Sequence[float], alpha: float) -> bool:
    """The evidence has reached 1/alpha: the candidate's rate is higher, with error at most alpha."""
    return log_evidence(log_ratios) >= math.log(1 / alpha)
