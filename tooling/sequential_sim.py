"""Simulated rollouts for the sequential test (operator/modelgate/core/sequential.py) and for the
fixed-threshold check it replaces: the A/A proof in the unit tests and docs/statistics.md.

    python -m tooling.sequential_sim     # rewrite docs/statistics.md (seeded: the same every time)
"""

from __future__ import annotations

import random
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from modelgate.cli.plan.traffic import failure_gap
from modelgate.core import sequential
from modelgate.core.sequential import Counts, fails, grid, update
from tooling import latency_sim

DOC = Path(__file__).resolve().parents[1] / "docs" / "statistics.md"
ALPHA = 0.05


def binomial(rng: random.Random, n: int, p: float) -> int:
    """Exact: successes among n trials, by geometric gaps between them (cheap for small p)."""
    count, position = 0, 0.0
    while True:
        position += failure_gap(rng, p)  # the number of the next success
        if position > n:
            return count
        count += 1


@dataclass(frozen=True)
class Traffic:
    share: float  # the candidate's share of requests
    requests: int  # per interval, both sides
    p_candidate: float
    p_incumbent: float


def sequential_rollout(
    rng: random.Random, traffic: Traffic, intervals: int, alpha: float = ALPHA
) -> int | None:
    """The interval at which the sequential test (tolerance 1, no margin) rolls back, or None."""
    rate_ratios = grid(1.0)
    ratios: tuple[float, ...] = ()
    n_c = round(traffic.requests * traffic.share)
    n_i = traffic.requests - n_c
    for interval in range(1, intervals + 1):
        candidate = Counts(n_c, binomial(rng, n_c, traffic.p_candidate))
        incumbent = Counts(n_i, binomial(rng, n_i, traffic.p_incumbent))
        ratios = update(ratios, rate_ratios, candidate, incumbent)
        if fails(ratios, rate_ratios, 1.0, alpha):
            return interval
    return None


@dataclass(frozen=True)
class Stretch:
    """Intervals at one traffic share."""

    share: float
    intervals: int


@dataclass(frozen=True)
class Decisions:
    """Per simulated rollout: the interval of its first Fail and of its first Pass (0: never), and the
    candidate requests counted at its first Pass. Each rollout is watched to the end whatever it
    decided, so the shares are of rollouts that would ever have decided so."""

    failed_at: np.ndarray
    passed_at: np.ndarray
    requests_at_pass: np.ndarray

    @property
    def ever_failed(self) -> float:
        return float(np.mean(self.failed_at > 0))

    @property
    def ever_passed(self) -> float:
        return float(np.mean(self.passed_at > 0))


def simulate_rollouts(
    rng: np.random.Generator,
    runs: int,
    stretches: tuple[Stretch, ...],
    requests: int,
    p_incumbent: float,
    ratio: float,
    margin: float,
    tolerance: float = 1.0,
    alpha: float = ALPHA,
) -> Decisions:
    """`runs` rollouts at once, looked at every interval of `requests` requests in all, the candidate's
    events binomial at ratio x the incumbent's rate, judged by the operator's own functions
    (sequential.advance, fails, passes) on arrays: each rollout's first Fail and first Pass."""
    rate_ratios = grid(tolerance, margin)
    ratios: tuple[np.ndarray, ...] = tuple(np.zeros(runs) for _ in rate_ratios)
    failed_at, passed_at = np.zeros(runs, dtype=int), np.zeros(runs, dtype=int)
    requests_at_pass = np.zeros(runs)
    counted, interval = 0.0, 0
    for stretch in stretches:
        n_c = round(requests * stretch.share)
        n_i = requests - n_c
        for _ in range(stretch.intervals):
            interval += 1
            counted += n_c
            events_c = rng.binomial(n_c, p_incumbent * ratio, runs)
            events = events_c + rng.binomial(n_i, p_incumbent, runs)
            ratios = sequential.advance(ratios, rate_ratios, n_c / requests, events_c, events)
            newly_failed = (failed_at == 0) & sequential.fails(ratios, rate_ratios, tolerance, alpha)
            newly_passed = (passed_at == 0) & sequential.passes(ratios, rate_ratios, margin, alpha)
            failed_at[newly_failed] = interval
            passed_at[newly_passed] = interval
            requests_at_pass[newly_passed] = counted
    return Decisions(failed_at, passed_at, requests_at_pass)


def threshold_rollout(
    rng: random.Random, traffic: Traffic, intervals: int, maximum: float, min_requests: int
) -> int | None:
    """The interval at which `errorRate <= maximum`, checked on each interval's candidate traffic
    (failureLimit 0, as most rollouts are written), rolls back, or None."""
    n_c = round(traffic.requests * traffic.share)
    for interval in range(1, intervals + 1):
        events = binomial(rng, n_c, traffic.p_candidate)
        if n_c >= min_requests and events / n_c > maximum:
            return interval
    return None


SHARES = (0.05, 0.10, 0.25, 0.50)
RATIOS = (1.0, 1.5, 2.0, 3.0, 5.0)
BASE_RATE = 0.01
REQUESTS = 600  # per interval, both sides: 10 requests/s at a 1 minute interval
INTERVALS = 60
RUNS = 300


PASS_BASE_RATES = (0.005, 0.01, 0.05)
PASS_MARGINS = (1.25, 1.5, 2.0)
PASS_SHARES = (0.10, 0.50)
PASS_REQUESTS = 6000  # per interval, both sides: 200 requests/s at a 30 s interval
PASS_INTERVALS = 400
PASS_RUNS = 100


def requests_to_pass(rng: np.random.Generator, base_rate: float, margin: float, share: float) -> str:
    """The median of the candidate requests counted when an A/A rollout first passes the margin."""
    decided = simulate_rollouts(
        rng, PASS_RUNS, (Stretch(share, PASS_INTERVALS),), PASS_REQUESTS, base_rate, 1.0, margin
    )
    passed = decided.requests_at_pass[decided.passed_at > 0]
    if len(passed) <= PASS_RUNS // 2:
        return f"> {PASS_REQUESTS * PASS_INTERVALS * share:,.0f}"
    return f"{np.median(np.where(decided.passed_at > 0, decided.requests_at_pass, np.inf)):,.0f}"


def render_passing() -> list[str]:
    """docs/statistics.md's section on the margin: the requests an A/A candidate needs to pass."""
    rng = np.random.default_rng(2026)
    lines = [
        "## Passing on evidence: requests needed",
        "",
        "With `sequential.margin`, a metric passes only once the confidence sequence lies below the",
        "margin (the candidate's rate is, with confidence, below margin x the incumbent's); until then it",
        "is Inconclusive and the step waits (`progressDeadlines.inconclusive` bounds the wait). Without a",
        "margin it passes while there is no evidence of harm, which is not evidence of no harm.",
        "",
        "Median candidate requests counted when a candidate exactly as good as the incumbent first",
        f"passes (alpha {ALPHA}, tolerance 1; {PASS_RUNS} simulated rollouts per cell by the operator's",
        f"own code, looked at every {PASS_REQUESTS:,} requests, e.g. 200 requests/s at a 30 s interval;",
        "a count is that of the look that passed; divide by the share for the requests served in all):",
        "",
        "| base rate | margin | " + " | ".join(f"{share:.0%} traffic" for share in PASS_SHARES) + " |",
        "| --- | --- |" + " --- |" * len(PASS_SHARES),
    ]
    for base_rate in PASS_BASE_RATES:
        for margin in PASS_MARGINS:
            cells = [requests_to_pass(rng, base_rate, margin, share) for share in PASS_SHARES]
            lines.append(f"| {base_rate:.1%} | {margin:g} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "The fewer the events, the more requests: a margin is shown from the events' split between the",
        "sides, so halving the base rate doubles the requests. A candidate at exactly the margin passes",
        "in at most alpha of rollouts, and one as good as the incumbent is rolled back in at most alpha",
        "(`tests/unit/test_sequential.py`, 10,000 simulated rollouts each, the share changing mid-run).",
        "",
    ]
    return lines


def _cell(times: list[int | None]) -> str:
    caught = [t for t in times if t is not None]
    if not caught:
        return "never"
    return f"{100 * len(caught) / len(times):.0f}% / {statistics.median(caught):.0f}"


def render() -> str:
    rng = random.Random(2022)
    lines = [
        "# The sequential test, measured",
        "",
        "<!-- Generated by `python -m tooling.sequential_sim` (seeded). Do not edit by hand. -->",
        "",
        "modelgate's `sequential` test (operator/modelgate/core/sequential.py) compares the candidate's",
        "event rate (errors, aborts, refusals, slow requests) with the incumbent's in the same intervals.",
        "It is a mixture of likelihood-ratio martingales over the candidate's share of the events, after",
        'Lindon & Malek, "Anytime-Valid Inference for Multinomial Count Data" (NeurIPS 2022), and',
        'Lindon, Sanden & Shirikian, "Rapid Regression Detection in Software Deployments through',
        'Sequential Testing" (KDD 2022): it may be evaluated at every interval, forever, and still rolls',
        "back a candidate that is no worse with probability at most alpha.",
        "",
        f"Simulated traffic: {REQUESTS} requests per interval in all, split by the candidate's share;",
        f"the incumbent fails {BASE_RATE:.0%} of its requests; {RUNS} rollouts per cell, each watched for",
        f"{INTERVALS} intervals; alpha {ALPHA}. The fixed-threshold check is what most rollouts are",
        "written with instead: `errorRate` of the candidate's requests in the interval above",
        f"{2 * BASE_RATE:.0%} (twice the base rate) rolls back, `minRequests: 20`, `failureLimit: 0`.",
        "",
        "Each cell: share of rollouts rolled back / median interval of the rollback.",
        "",
    ]
    methods: tuple[tuple[str, Callable[[Traffic], int | None]], ...] = (
        ("Sequential test", lambda t: sequential_rollout(rng, t, INTERVALS)),
        (
            "Fixed threshold (errorRate > 2%)",
            lambda t: threshold_rollout(rng, t, INTERVALS, 2 * BASE_RATE, 20),
        ),
    )
    for title, run in methods:
        lines += [
            f"## {title}",
            "",
            "| candidate rate / incumbent rate | "
            + " | ".join(f"{share:.0%} traffic" for share in SHARES)
            + " |",
            "| --- |" + " --- |" * len(SHARES),
        ]
        for ratio in RATIOS:
            cells = []
            for share in SHARES:
                traffic = Traffic(share, REQUESTS, BASE_RATE * ratio, BASE_RATE)
                cells.append(_cell([run(traffic) for _ in range(RUNS)]))
            label = "1.0 (A/A: every rollback is false)" if ratio == 1.0 else f"{ratio:g}"
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "## The confidence sequence, and what a spec asks of it",
        "",
        "The operator keeps log L(theta) - log L(1), the conditional likelihood of the candidate's share",
        "of each interval's events, on a grid of rate ratios theta (0.1 to 10, and the spec's tolerance,",
        "margin and maxRatio). A ratio theta0 is excluded from below when the average of L(theta)/L(theta0)",
        "over the grid points above it reaches 1/alpha, and from above likewise with the points below;",
        "each is wrong with probability at most alpha however often it is looked at and however the",
        "traffic share changes. `status.analysis[].sequential.bounds` holds the interval (each end a",
        "one-sided bound at level alpha, the two together a 1 - 2 alpha sequence, as in equivalence",
        "testing) and the e-values; `rollbackReason.bounds` the same at the rollback.",
        "",
        "- `sequential: {alpha, tolerance}` (tolerance default 1, in [1, 10]): Fail when the whole",
        "  sequence lies above tolerance. Without a margin the metric passes otherwise: no evidence of",
        "  harm, not evidence of no harm; a short step promotes whatever its counts could not judge.",
        "- `margin` (above tolerance, at most 10): Pass only once the whole sequence lies below the",
        "  margin, Inconclusive in between. A candidate as good as the incumbent is rolled back with",
        "  probability at most alpha; one at the margin passes with probability at most alpha.",
        "- `compare: {maxRatio, confidence: {alpha}}` on a rate preset: Fail when the ratio's lower",
        "  bound is above maxRatio. `maxIncrease` with confidence: Fail when the candidate's rate's lower",
        "  bound minus the incumbent's upper bound (each a Beta-mixture sequence at alpha/2) is above it.",
        "  A latency preset's comparison bounds its quantile from bucket counts (below).",
        "- Margins are ratios: given an interval's events, their split between the sides depends on the",
        "  rates only through their ratio, so the ratio is what the counts identify without a model of the",
        "  base rate. A margin in points needs each side's rate bounded on its own, which is slower; it is",
        "  offered for compare.maxIncrease (a Fail), not for passing.",
        "- Changing tolerance, margin or maxRatio mid-rollout restarts the evidence from the totals last",
        "  read (bounds chosen after seeing data would not hold alpha), as does evidence kept by an older",
        "  operator on another grid; the verdict's message says so.",
        "",
    ]
    lines += render_passing()
    lines += [
        "Reading the tables: over a rollout of 60 intervals, the fixed threshold rolls back nearly every",
        "candidate that is exactly as good as the incumbent (its A/A row): each interval is one more",
        "chance for noise to cross 2%, and a 5% canary's interval holds 30 requests, where one error is",
        "already 3.3%. Its quick rollbacks of real regressions are worth nothing when it rolls back",
        "everything. The sequential test stays at or below alpha in the A/A row at every share, however",
        "many intervals it is looked at; the more traffic and the larger the regression, the sooner it",
        "rolls back. `tests/unit/test_sequential.py` checks the A/A bound over 10,000 simulated rollouts.",
        "",
        "## How the counts are obtained",
        "",
        "At each evaluation the operator reads each side's cumulative totals from Prometheus with",
        "instant queries, `sum(<counter>{<side's selector>})` for the requests and for the events",
        "(`... or vector(0)` where the events' series appears only with the first event, a 5xx or an",
        "abort), and keeps them in status (`status.analysis[].sequential.candidateTotals` and",
        "`incumbentTotals`), so a restarted operator goes on from them. An interval's counts are what",
        "the totals grew by since the previous evaluation: every event is counted once, in the first",
        "interval whose reading includes its scrape. The first evaluation only records the baseline.",
        "",
        "Counts over a window, `sum(increase(<counter>[<time since the previous evaluation>]))`, would",
        "not do: `increase()` extrapolates a window's samples to its edges, so with an interval of a few",
        "scrapes an event between two windows' samples is lost and one inside a window is counted about",
        "twice. Events counted twice enter the likelihood ratio twice, and alpha no longer holds. It",
        "also never counts the first event of a series that appears at 1.",
        "",
        "A total that went down means a counter was reset (a pod restarted, or left and took its",
        "counts with it): that interval counts nothing, on either side, and the new totals are the",
        "baseline. Leaving an interval out multiplies the evidence by 1; whether it is left out depends",
        "on pods restarting, not on which side its events fell on, so the evidence stays a martingale",
        "under the null and alpha holds. (A pod that leaves while the others' growth hides the drop in",
        "the sum is not detected: its lifetime counts are missing from that interval.)",
        "",
    ]
    return "\n".join(lines + latency_sim.doc_section())


def main() -> int:
    DOC.write_text(render())
    print(f"wrote {DOC.relative_to(DOC.parents[1])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
