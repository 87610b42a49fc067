"""Simulated rollouts for the latency comparison with confidence (operator/modelgate/core/
quantile_bounds.py), vectorised over runs: each interval, each side's requests fall into the buckets
of vLLM's TTFT histogram, and the operator's own functions judge the counts so far.

    python -m tooling.latency_sim     # print the table bench/REPORT.md quotes (seeded)
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from modelgate.core import quantile_bounds

# vLLM's (and its simulator's) time-to-first-token buckets, seconds.
TTFT_GRID = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
ALPHA = 0.05
QUANTILE = 0.99


def lognormal_exceedance(median: float, sigma: float, grid: Sequence[float] = TTFT_GRID) -> tuple[float, ...]:
    """P(X > b) at each boundary for a log-normal latency."""
    return tuple(0.5 * math.erfc(math.log(b / median) / (sigma * math.sqrt(2))) for b in grid)


@dataclass(frozen=True)
class Side:
    exceedance: tuple[float, ...]  # P(X > b) at each boundary of the grid, nonincreasing

    def bins(self) -> np.ndarray:
        """The probability of each bucket: (-inf, b0], (b0, b1], ..., (b_last, inf)."""
        above = np.array((1.0, *self.exceedance, 0.0))
        return np.clip(above[:-1] - above[1:], 0.0, None)


@dataclass(frozen=True)
class Rollout:
    candidate: Side
    incumbent: Side
    shares: tuple[float, ...]  # the candidate's share in each interval
    requests: int  # per interval, both sides
    max_ratio: float = 1.0
    margin: float | None = None


def _drawn(rng: np.random.Generator, side: Side, requests: np.ndarray) -> np.ndarray:
    """Requests above each boundary, per run: (runs, boundaries)."""
    counts = rng.multinomial(requests, side.bins())
    return np.cumsum(counts[:, ::-1], axis=1)[:, ::-1][:, 1:]


def first_decisions(rng: np.random.Generator, rollout: Rollout, runs: int) -> tuple[np.ndarray, np.ndarray]:
    """The interval (1-based) of each run's first Fail and first Pass; 0 where none came."""
    half = ALPHA / 2
    grid = TTFT_GRID
    c_seen = np.zeros((runs, len(grid)))
    i_seen = np.zeros((runs, len(grid)))
    c_requests, i_requests = np.zeros(runs), np.zeros(runs)
    failed_at, passed_at = np.zeros(runs, dtype=int), np.zeros(runs, dtype=int)
    for interval, share in enumerate(rollout.shares, start=1):
        n_c = rng.binomial(rollout.requests, share, size=runs)
        n_i = rollout.requests - n_c
        c_seen += _drawn(rng, rollout.candidate, n_c)
        i_seen += _drawn(rng, rollout.incumbent, n_i)
        c_requests += n_c
        i_requests += n_i
        c_cols, i_cols = list(c_seen.T), list(i_seen.T)
        c_above = quantile_bounds.above(c_cols, c_requests, QUANTILE, half)
        i_at_most = quantile_bounds.at_most(i_cols, i_requests, QUANTILE, half)
        failed = np.asarray(quantile_bounds.fails(c_above, i_at_most, grid, rollout.max_ratio))
        failed_at[(failed_at == 0) & failed] = interval
        if rollout.margin is not None:
            c_at_most = quantile_bounds.at_most(c_cols, c_requests, QUANTILE, half)
            i_above = quantile_bounds.above(i_cols, i_requests, QUANTILE, half)
            passed = np.asarray(quantile_bounds.passes(c_at_most, i_above, grid, rollout.margin))
            passed_at[(passed_at == 0) & passed] = interval
    return failed_at, passed_at


def null_boundary_miscoverage(rng: np.random.Generator, runs: int, intervals: int, requests: int) -> float:
    """The least favourable case for one side's lower bound: P(X > 0.06) exactly 1 - q, so the
    quantile is 0.06 and "above 0.06" is wrong. The share of runs that ever claimed it (at most
    alpha/2, the level of each side's bound)."""
    at = TTFT_GRID.index(0.06)
    side = Side(tuple(1.0 if b < 0.06 else (1 - QUANTILE) * (0.06 / b) ** 8 for b in TTFT_GRID))
    seen, counted = np.zeros((runs, len(TTFT_GRID))), np.zeros(runs)
    ever = np.zeros(runs, dtype=bool)
    for _ in range(intervals):
        seen += _drawn(rng, side, np.full(runs, requests))
        counted += requests
        ever |= np.asarray(quantile_bounds.above(list(seen.T), counted, QUANTILE, ALPHA / 2)[at])
    return float(ever.mean())


def changing_shares(intervals: int, first: float, then: float) -> tuple[float, ...]:
    """A share that changes half-way, as a rollout's steps do."""
    return tuple(first if k < intervals // 2 else then for k in range(intervals))


def summary(failed_at: np.ndarray) -> tuple[float, float | None]:
    """The share of runs that failed, and the median interval of the failures."""
    hits = failed_at[failed_at > 0]
    return float((failed_at > 0).mean()), float(statistics.median(hits.tolist())) if hits.size else None


def main() -> int:
    rng = np.random.default_rng(39)
    healthy = Side(lognormal_exceedance(0.045, 0.1))
    slower = Side(lognormal_exceedance(0.045 * 1.5, 0.1))
    print(f"null boundary: lower bound wrong in {null_boundary_miscoverage(rng, 10_000, 60, 250):.4f}")
    for share in (0.05, 0.1, 0.5):
        shares = changing_shares(60, share, 0.5)
        a_a, passed = first_decisions(rng, Rollout(healthy, healthy, shares, 250, 1.0, margin=1.5), 10_000)
        regressed, _ = first_decisions(rng, Rollout(slower, healthy, shares, 250, 1.2), 10_000)
        print(f"share {share}: A/A {summary(a_a)} pass {summary(passed)}; 1.5x {summary(regressed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
