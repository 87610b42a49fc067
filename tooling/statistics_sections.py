"""docs/statistics.md's sections on passing and on the fail side, simulated on arrays of seeded
rollouts with the operator's own functions (core/sequential.py, core/counted.py), looked at every
evaluation interval: the requests a candidate as good as the incumbent needs to pass a ratio margin
or an absolute one, and how soon the fail side catches a regression, beside its uniform prior and
the oracle SPRT. tooling/sequential_sim.py assembles the page."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from modelgate.api import SequentialTest
from modelgate.core import counted, sequential
from modelgate.core.sequential import grid

ALPHA = 0.05


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
    near_weight: float = sequential.HARM_NEAR_WEIGHT,
    until: Callable[[Decisions], bool] | None = None,
) -> Decisions:
    """`runs` rollouts at once, looked at every interval of `requests` requests in all, the candidate's
    events binomial at ratio x the incumbent's rate, judged by the operator's own functions
    (sequential.advance, fails, passes) on arrays: each rollout's first Fail and first Pass. `until`:
    stop once the decisions so far say enough (later ones are then not known); `near_weight`: the
    fail side's prior (sequential.log_harm_evidence)."""
    rate_ratios = grid(tolerance, margin)
    ratios: tuple[np.ndarray, ...] = tuple(np.zeros(runs) for _ in rate_ratios)
    decided = Decisions(np.zeros(runs, dtype=int), np.zeros(runs, dtype=int), np.zeros(runs))
    counted_requests, interval = 0.0, 0
    for stretch in stretches:
        n_c = round(requests * stretch.share)
        n_i = requests - n_c
        for _ in range(stretch.intervals):
            interval += 1
            counted_requests += n_c
            events_c = rng.binomial(n_c, p_incumbent * ratio, runs)
            events = events_c + rng.binomial(n_i, p_incumbent, runs)
            ratios = sequential.advance(ratios, rate_ratios, n_c / requests, events_c, events)
            fail = sequential.fails(ratios, rate_ratios, tolerance, alpha, near_weight)
            newly_failed = (decided.failed_at == 0) & fail
            newly_passed = (decided.passed_at == 0) & sequential.passes(ratios, rate_ratios, margin, alpha)
            decided.failed_at[newly_failed] = interval
            decided.passed_at[newly_passed] = interval
            decided.requests_at_pass[newly_passed] = counted_requests
            if until is not None and until(decided):
                return decided
    return decided


def _median_passed(decided: Decisions) -> bool:
    return bool(np.count_nonzero(decided.passed_at) > len(decided.passed_at) // 2)


PASS_BASE_RATES = (0.005, 0.01, 0.05)
PASS_MARGINS = (1.25, 1.5, 2.0)
PASS_SHARES = (0.10, 0.50)
PASS_REQUESTS = 600  # per interval, both sides: 20 requests/s at a 30 s interval
PASS_INTERVALS = 2000
PASS_RUNS = 100
INCREASES = (0.0005, 0.001, 0.005, 0.01)


def requests_to_pass(rng: np.random.Generator, base_rate: float, margin: float, share: float) -> str:
    """The median of the candidate requests counted when an A/A rollout first passes the margin."""
    decided = simulate_rollouts(
        rng,
        PASS_RUNS,
        (Stretch(share, PASS_INTERVALS),),
        PASS_REQUESTS,
        base_rate,
        1.0,
        margin,
        until=_median_passed,
    )
    if not _median_passed(decided):
        return f"> {PASS_REQUESTS * PASS_INTERVALS * share:,.0f}"
    return f"{np.median(np.where(decided.passed_at > 0, decided.requests_at_pass, np.inf)):,.0f}"


def render_passing() -> list[str]:
    """The requests a candidate as good as the incumbent needs to pass a ratio margin, and a service
    without errors an absolute one, looked at every interval."""
    rng = np.random.default_rng(2026)
    shares = " | ".join(f"{share:.0%} traffic" for share in PASS_SHARES)
    lines = [
        "## Passing on evidence: requests needed",
        "",
        "With a margin, a metric passes only once the evidence shows the candidate within it; until then",
        "it is Inconclusive and the step waits (`progressDeadlines.inconclusive` bounds the wait, 10",
        "minutes by default). Without a margin it passes while there is no evidence of harm, which is",
        "not evidence of no harm. The evidence is the rollout's since it began: once shown, later steps",
        "pass at their first evaluation unless new events undo it.",
        "",
        "Median candidate requests counted when a candidate exactly as good as the incumbent first",
        f"passes `sequential.margin` (alpha {ALPHA}, tolerance 1; {PASS_RUNS} simulated rollouts per cell",
        f"by the operator's own code, looked at every interval of {PASS_REQUESTS} requests in all, 20",
        "requests/s at a 30 s interval; divide by the share for the requests served in all):",
        "",
        f"| base rate | margin | {shares} |",
        "| --- | --- |" + " --- |" * len(PASS_SHARES),
    ]
    for base_rate in PASS_BASE_RATES:
        for margin in PASS_MARGINS:
            cells = [requests_to_pass(rng, base_rate, margin, share) for share in PASS_SHARES]
            lines.append(f"| {base_rate:.1%} | {margin:g} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "The fewer the events, the more requests: a ratio margin is shown from the events' split between",
        "the sides, so halving the base rate doubles the requests, and with no events at all it is never",
        "shown. A candidate at exactly the margin passes in at most alpha of rollouts, and one as good",
        "as the incumbent is rolled back in at most alpha (`tests/unit/test_sequential.py`, 10,000",
        "simulated rollouts each, the share changing mid-run).",
        "",
        *render_absolute(),
    ]
    return lines


def render_absolute() -> list[str]:
    """The candidate requests a service without errors needs to pass `marginIncrease`."""
    shares = " | ".join(f"{share:.0%} traffic" for share in PASS_SHARES)
    lines = [
        "Candidate requests counted when a service without errors on either side first passes",
        f"`sequential.marginIncrease` (alpha {ALPHA}; core/counted.py's `zero_event_pass`, which",
        "`modelgate plan` prints too; looked at every interval as above; about",
        "log(4/alpha)/marginIncrease):",
        "",
        f"| marginIncrease | log(4/alpha)/marginIncrease | {shares} |",
        "| --- | --- |" + " --- |" * len(PASS_SHARES),
    ]
    for increase in INCREASES:
        test = SequentialTest(alpha=ALPHA, margin_increase=increase)
        cells = []
        for share in PASS_SHARES:
            needed = counted.zero_event_pass(test, PASS_REQUESTS * share)
            cells.append(f"{needed:,.0f}")
        formula = math.log(4 / ALPHA) / increase
        lines.append(f"| {increase:g} | {formula:,.0f} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


DETECTION_SHARES = (0.05, 0.10)
DETECTION_RATIOS = (1.5, 2.0, 3.0, 5.0)
DETECTION_REQUESTS = 600  # per interval, both sides, as the tables above
DETECTION_BASE_RATE = 0.01
DETECTION_INTERVALS = 200
DETECTION_RUNS = 500


def oracle_sprt(
    rng: np.random.Generator, runs: int, share: float, ratio: float, alternative: float
) -> np.ndarray:
    """Per rollout, the interval at which Wald's SPRT of `alternative` against 1, which knows the
    effect it looks for, reaches 1/alpha (0: never); drawn as simulate_rollouts draws."""
    n_c = round(DETECTION_REQUESTS * share)
    n_i = DETECTION_REQUESTS - n_c
    (log_ratio,), failed_at = (np.zeros(runs),), np.zeros(runs, dtype=int)
    for interval in range(1, DETECTION_INTERVALS + 1):
        events_c = rng.binomial(n_c, DETECTION_BASE_RATE * ratio, runs)
        events = events_c + rng.binomial(n_i, DETECTION_BASE_RATE, runs)
        (log_ratio,) = sequential.advance(
            (log_ratio,), (alternative,), n_c / DETECTION_REQUESTS, events_c, events
        )
        failed_at[(failed_at == 0) & (log_ratio >= math.log(1 / ALPHA))] = interval
    return failed_at


def detection_times(share: float, ratio: float, seed: int) -> dict[str, np.ndarray]:
    """The intervals at which each test first fails (0: not by the median's interval), on the same
    seeded traffic: the fail side's uniform prior (the operator's before), its weighted one, and the
    oracle SPRT."""
    times = {}
    for name, near_weight in (("uniform", 1.0), ("weighted", sequential.HARM_NEAR_WEIGHT)):
        rng = np.random.default_rng(seed)
        stretches = (Stretch(share, DETECTION_INTERVALS),)
        decided = simulate_rollouts(
            rng,
            DETECTION_RUNS,
            stretches,
            DETECTION_REQUESTS,
            DETECTION_BASE_RATE,
            ratio,
            10.0,
            near_weight=near_weight,
            until=_median_failed,
        )
        times[name] = decided.failed_at
    times["oracle"] = oracle_sprt(np.random.default_rng(seed), DETECTION_RUNS, share, ratio, ratio)
    return times


def _median_failed(decided: Decisions) -> bool:
    return bool(np.count_nonzero(decided.failed_at) > len(decided.failed_at) // 2)


def median_interval(failed_at: np.ndarray) -> float:
    """The median interval of the first Fail, counting a rollout never failed as never (inf)."""
    return float(np.median(np.where(failed_at > 0, failed_at, np.inf)))


def render_detection() -> list[str]:
    """The fail side against its uniform prior and the oracle SPRT, per share and regression."""
    header = " | ".join(f"{share:.0%}: uniform / weighted / oracle" for share in DETECTION_SHARES)
    lines = [
        "## The fail side: a one-sided mixture weighted toward small regressions",
        "",
        'The fail side\'s e-value against "the rate ratio is at most tolerance" is a mixture of',
        "likelihood ratios over the grid's ratios above tolerance only (a truncated mixture: none of",
        "its weight is on improvements). Ratios up to 4x tolerance weigh 4 times as much as those",
        "beyond: regressions of 1.5x to 2x, which need the most evidence, are caught sooner, and 5x",
        "no later. Each weighted term is a martingale at tolerance and a supermartingale below it, so",
        "the weights keep alpha. A predictable plug-in (betting on the ratio estimated from the",
        "intervals before) was slower than both mixtures in the same simulation, and is not used.",
        "",
        f"Median interval of the first Fail ({DETECTION_RUNS} rollouts per cell, the same seeded",
        f"traffic for each test: {DETECTION_REQUESTS} requests per interval in all, the incumbent failing",
        f"{DETECTION_BASE_RATE:.0%}, alpha {ALPHA}, tolerance 1, watched {DETECTION_INTERVALS} intervals);",
        "uniform: the mixture before, its weight spread evenly up to 10x; oracle: Wald's SPRT of the",
        "true ratio against 1, which no test can know. Both mixtures roll back a candidate as good as",
        "the incumbent in at most alpha of rollouts (`tests/unit/test_sequential.py`, 10,000 of them,",
        "the share changing mid-run):",
        "",
        f"| candidate rate / incumbent rate | {header} |",
        "| --- |" + " --- |" * len(DETECTION_SHARES),
    ]
    for ratio in DETECTION_RATIOS:
        cells = []
        for share in DETECTION_SHARES:
            times = detection_times(share, ratio, seed=2027)
            cells.append(" / ".join(f"{median_interval(t):g}" for t in times.values()))
        lines.append(f"| {ratio:g} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "A breach the counts already show fails at that evaluation, whatever `minRequests` says: the",
        "sequence is valid at every look, so a window's size adds nothing to it",
        "(tests/unit/test_engine_margin_increase.py).",
        "",
    ]
    return lines
