"""Simulated rollouts for the latency comparison with confidence (operator/modelgate/core/
latency.py), vectorised over runs: each interval, each side's requests fall into the buckets
of vLLM's TTFT histogram, and the operator's own functions judge the counts so far.

    python -m tooling.latency_sim     # print the table bench/REPORT.md quotes (seeded)
"""

from __future__ import annotations

import functools
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from modelgate.cli.plan import latency_estimate
from modelgate.core import latency

# vLLM's (and its simulator's) time-to-first-token buckets, seconds.
TTFT_GRID = latency_estimate.TTFT_GRID
ALPHA = 0.05
QUANTILE = 0.99


def lognormal_exceedance(median: float, sigma: float, grid: Sequence[float] = TTFT_GRID) -> tuple[float, ...]:
    """P(X > b) at each boundary for a log-normal latency (`modelgate plan`'s)."""
    return latency_estimate.lognormal_exceedance(median, sigma, grid)


@dataclass(frozen=True)
class Side:
    exceedance: tuple[float, ...]  # P(X > b) at each boundary of the grid, nonincreasing

    def bins(self) -> np.ndarray:
        """The probability of each bucket: (-inf, b0], (b0, b1], ..., (b_last, inf)."""
        above = np.array((1.0, *self.exceedance, 0.0))
        bins: np.ndarray = np.clip(above[:-1] - above[1:], 0.0, None)
        return bins


# Whether a simulation may stop, from each run's first Fail and first Pass so far.
Until = Callable[[np.ndarray, np.ndarray], bool]


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


def first_decisions(
    rng: np.random.Generator, rollout: Rollout, runs: int, until: Until | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The interval (1-based) of each run's first Fail and first Pass; 0 where none came (or, with
    `until`, none by the interval at which it held of the decisions so far)."""
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
        c_above = latency.above(c_cols, c_requests, QUANTILE, half)
        i_at_most = latency.at_most(i_cols, i_requests, QUANTILE, half)
        failed = np.asarray(latency.fails(c_above, i_at_most, grid, rollout.max_ratio))
        failed_at[(failed_at == 0) & failed] = interval
        if rollout.margin is not None:
            c_at_most = latency.at_most(c_cols, c_requests, QUANTILE, half)
            i_above = latency.above(i_cols, i_requests, QUANTILE, half)
            passed = np.asarray(latency.passes(c_at_most, i_above, grid, rollout.margin))
            passed_at[(passed_at == 0) & passed] = interval
        if until is not None and until(failed_at, passed_at):
            break
    return failed_at, passed_at


def most_failed(failed_at: np.ndarray, passed_at: np.ndarray) -> bool:
    """More than half of the runs failed: their median is known."""
    return bool(np.count_nonzero(failed_at) > failed_at.size // 2)


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
        ever |= np.asarray(latency.above(list(seen.T), counted, QUANTILE, ALPHA / 2)[at])
    return float(ever.mean())


def changing_shares(intervals: int, first: float, then: float) -> tuple[float, ...]:
    """A share that changes half-way, as a rollout's steps do."""
    return tuple(first if k < intervals // 2 else then for k in range(intervals))


def summary(failed_at: np.ndarray) -> tuple[float, float | None]:
    """The share of runs that failed, and the median interval of the failures."""
    hits = failed_at[failed_at > 0]
    return float((failed_at > 0).mean()), float(statistics.median(hits.tolist())) if hits.size else None


SIZING_SHARES = (0.05, 0.10, 0.25, 0.50)
SIZING_REQUESTS = 600  # per interval, both sides: 20 requests/s at a 30 s interval
SIZING_INTERVALS = 60  # 30 minutes
SIZING_RUNS = 1_000
SIZING_MEDIAN = 0.045  # the incumbent's median TTFT, seconds (its P99 0.057 s: in (0.04, 0.06])
SIZING_RULE = latency_estimate.Comparison(TTFT_GRID, QUANTILE, ALPHA, max_ratio=1.2, margin=1.5)


@dataclass(frozen=True)
class Sized:
    """One decision at one share: the simulated median evaluation (inf: not by half of the runs)
    and `modelgate plan`'s estimate (None: never)."""

    median: float
    estimate: int | None

    def cell(self, share: float) -> str:
        planned = "never" if self.estimate is None else f"{self.estimate}"
        if not math.isfinite(self.median):
            return f"> {SIZING_INTERVALS} / {planned}"
        requests = self.median * SIZING_REQUESTS * share
        return f"{self.median:g} ({requests:,.0f}) / {planned}"


@dataclass(frozen=True)
class SizingRow:
    share: float
    fails: tuple[Sized, ...]  # a candidate 1.5x, then 2x slower
    passes: Sized  # an A/A pair, with the margin
    rolled_back: float  # the share of A/A runs rolled back within SIZING_INTERVALS


def _median(decided_at: np.ndarray) -> float:
    return float(np.median(np.where(decided_at > 0, decided_at, np.inf)))


@functools.cache
def sizing_rows() -> tuple[SizingRow, ...]:
    """The median evaluations to Fail a slower candidate and to Pass an A/A pair, per share: the
    seeded simulation beside the expected counts `modelgate plan` judges (cli/plan/latency_estimate.py)."""
    rng = np.random.default_rng(2028)
    rule, per_look = SIZING_RULE, SIZING_REQUESTS
    sides = {
        s: Side(lognormal_exceedance(SIZING_MEDIAN * s, latency_estimate.LOG_SPREAD)) for s in (1.0, 1.5, 2.0)
    }
    healthy = sides[1.0].exceedance
    rows = []
    for share in SIZING_SHARES:
        shares = (share,) * SIZING_INTERVALS
        fails = []
        for slowdown in (1.5, 2.0):
            slower = Rollout(sides[slowdown], sides[1.0], shares, per_look, SIZING_RULE.max_ratio or 1.0)
            failed, _ = first_decisions(rng, slower, SIZING_RUNS, until=most_failed)
            planned = latency_estimate.looks_to_fail(
                rule, sides[slowdown].exceedance, healthy, per_look, share
            )
            fails.append(Sized(_median(failed), planned))
        a_a = Rollout(sides[1.0], sides[1.0], shares, per_look, slower.max_ratio, margin=rule.margin)
        rolled_back, passed = first_decisions(rng, a_a, SIZING_RUNS)
        passes = Sized(_median(passed), latency_estimate.looks_to_pass(rule, healthy, per_look, share))
        rows.append(SizingRow(share, tuple(fails), passes, float(np.mean(rolled_back > 0))))
    return tuple(rows)


def render_sizing() -> list[str]:
    return [
        f"| {row.share:.0%} | "
        + " | ".join(sized.cell(row.share) for sized in (*row.fails, row.passes))
        + f" | {row.rolled_back:.2%} |"
        for row in sizing_rows()
    ]


def sizing_section() -> list[str]:
    """The table users size a latency rollout with, and how to read it."""
    rule, spread = SIZING_RULE, latency_estimate.LOG_SPREAD
    return [
        "### How soon it decides, at the evaluation interval",
        "",
        "Median evaluations after the baseline (candidate requests by then) to the first decision, at",
        f"{SIZING_REQUESTS} requests per evaluation in all (20 requests/s at a 30 s interval), the share",
        "steady: a TTFT P99 on vLLM's grid, the incumbent's latencies log-normal (median",
        f"{SIZING_MEDIAN} s, sigma {spread:g}: P99 0.057 s), `maxRatio: {rule.max_ratio:g}`,",
        f"`margin: {rule.margin:g}`, alpha {rule.alpha:g}; {SIZING_RUNS:,} seeded rollouts per cell by the",
        f"operator's own functions, each evaluation looked at, for {SIZING_INTERVALS} evaluations. After",
        "the slash, `modelgate plan`'s estimate: the evaluation at which the expected counts decide",
        "(operator/modelgate/cli/plan/latency_estimate.py).",
        "",
        "| candidate share | 1.5x slower: Fail | 2x slower: Fail | A/A: Pass | A/A rolled back |",
        "| --- | --- | --- | --- | --- |",
        *render_sizing(),
        "",
        "A regression that crosses a boundary is caught within a few evaluations at any share: the",
        "candidate's count above 0.08 s is far beyond 1% at once. Passing needs each side's P99 pinned",
        "inside its bucket from both ends, so it waits for the smaller side's requests (about 750 of",
        "the candidate's here) and gains most from a larger first share. The estimate judges expected",
        "counts, not random ones: within an evaluation of the median to Fail, and at or after the",
        "median to Pass, since a test looked at every evaluation takes the first of the random",
        "counts' crossings (tests/unit/test_plan_latency.py). Other quantiles, spreads and grids move",
        "the numbers; `modelgate plan` computes them for the rollout's own.",
        "",
    ]


def doc_section() -> list[str]:
    """docs/statistics.md's section on the latency form (its numbers: bench/REPORT.md)."""
    return [
        "## Latency with confidence",
        "",
        "`compare: {maxRatio, confidence: {alpha, margin}}` on `ttftP50`, `ttftP99`, `tpotP99` or",
        "`latencyP99` judges the quantile on each side's histogram counts since the rollout began",
        '(operator/modelgate/core/latency.py), after Howard & Ramdas, "Sequential estimation of',
        'quantiles with applications to A/B-testing and best-arm identification" (Bernoulli 2022).',
        "",
        "The requests above a bucket boundary b are a count, and the q-quantile is above b exactly when more",
        "than 1 - q of the requests are: one anytime-valid test per boundary (a mixture of binomial",
        "likelihood ratios, as the rate tests are) shows the quantile above b, or at most b. Exceedance",
        "counts fall as b rises, so no union over boundaries is paid: a wrong bound needs the one test at",
        "the boundary next to the true quantile to be wrong.",
        "",
        "- Fail when the candidate's lower bound is at least maxRatio x the incumbent's upper bound.",
        "  Each side's bounds are at alpha/2, so a candidate no slower than maxRatio x the incumbent is",
        "  rolled back with probability at most alpha, however often it is evaluated.",
        "- With `margin`: Pass only once the candidate's upper bound is at most margin x the",
        "  incumbent's lower bound (Inconclusive until then); a candidate at or above the margin passes",
        "  with probability at most alpha. Without it the metric passes while no harm is shown.",
        "- `status.analysis[].quantiles` keeps each side's requests above each boundary and the bounds;",
        "  `rollbackReason.quantileBounds` the bounds at the rollback.",
        "",
        "What the buckets allow: the bounds are bucket boundaries, never closer.",
        "",
        "A quantile between two boundaries is bounded by the boundaries around it, so an A/A pair",
        "with its P99 in (0.04, 0.06] can pass only a margin of at least 1.5 (0.06 / 0.04), and a",
        "regression is seen only once a boundary separates maxRatio x the incumbent's quantile from the",
        "candidate's.",
        "",
        "On vLLM's TTFT grid (0.04, 0.06, 0.08, 0.1, 0.25 s ...) a 1.5x TTFT from a P99 of 0.055 s (to",
        "0.083 s) fails maxRatio 1.2 (above 0.08 >= 1.2 x 0.06), while from 0.065 s (to 0.098 s) only",
        "maxRatio 1 (above 0.08 against at most 0.08) can show it. Choose maxRatio and margin with the",
        "grid in view; between 0.1 and 0.25 only ratios of 2.5 can be told apart.",
        "",
        *sizing_section(),
        "The operator reads each side's cumulative buckets as totals at each evaluation, one instant",
        'query per boundary (`sum(<histogram>_bucket{<side>, le="b"})`, the server\'s own grid where it',
        "is known), and counts what they grew by, as for rates: the first reading is a baseline, and a",
        "side whose counts went down (a pod restarted) counts nothing in that interval. A boundary a",
        "server does not export is left out; both sides are judged on the boundaries they share.",
        "With none in common (a server whose buckets are none the preset reads), the metric stays",
        "Inconclusive and its message says that `compare.confidence` cannot bound it: waiting will not.",
        "",
        "`tests/unit/test_quantile_bounds.py` runs the seeded simulation over histogram counts",
        "(tooling/latency_sim.py): the least favourable case, a quantile exactly at a boundary, is",
        "claimed above it in well under alpha/2 of runs, A/A rollouts are rolled back in at most alpha,",
        "and a 1.5x slower first token is rolled back in nearly every run.",
        "",
    ]


def main() -> int:
    rng = np.random.default_rng(39)
    healthy = Side(lognormal_exceedance(0.045, 0.1))
    slower = Side(lognormal_exceedance(0.045 * 1.5, 0.1))
    at_boundary = Side(lognormal_exceedance(0.06 / math.exp(2.326 * 0.1), 0.1))
    print(f"quantile at a boundary, claimed above it: {null_boundary_miscoverage(rng, 10_000, 60, 250):.4f}")
    print("first share | A/A at a boundary, maxRatio 1 | A/A, margin 1.5: rolled back; passed")
    print("  | 1.5x, maxRatio 1.2 (each: share of runs, median interval)")
    for share in (0.05, 0.1, 0.5):
        shares = changing_shares(60, share, 0.5)
        worst, _ = first_decisions(rng, Rollout(at_boundary, at_boundary, shares, 250), 10_000)
        a_a, passed = first_decisions(rng, Rollout(healthy, healthy, shares, 250, 1.0, margin=1.5), 10_000)
        regressed, _ = first_decisions(rng, Rollout(slower, healthy, shares, 250, 1.2), 10_000)
        print(f"{share} | {summary(worst)} | {summary(a_a)}; {summary(passed)} | {summary(regressed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
