"""How soon the latency form (compare.confidence on a latency preset) decides, at a traffic share.

How soon the latency form decides: the evaluation at which the operator's own bounds
(core/latency.py) on each side's expected bucket counts show a slower candidate above
maxRatio x the incumbent's quantile (Fail), or a candidate as fast as the incumbent within the margin
(Pass). Latencies are log-normal, the incumbent's quantile where the caller says; the candidate's
are `slowdown` times the incumbent's. The counts are their expectations (requests x the share above
each boundary), so the answer is deterministic and needs no random draws: `modelgate plan` prints it,
and docs/statistics.md's table sets it beside the median of tooling/latency_sim.py's simulation."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from modelgate.core import latency

# vLLM's histogram boundaries (seconds), per preset, up to 10 s (end to end: 120 s; vLLM's go on to
# 2560, 80 and 7680 s): time to first token, time per output token and end-to-end request latency.
# The operator reads the server's own; the plan assumes vLLM's.
TTFT_GRID = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
TPOT_GRID = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
E2E_GRID = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0)
GRIDS = {"ttftP50": TTFT_GRID, "ttftP99": TTFT_GRID, "tpotP99": TPOT_GRID, "latencyP99": E2E_GRID}
# The log-normal's sigma: log(P99 / P50) = 2.326 sigma, so P99 is 1.26 x P50 (a steady server).
LOG_SPREAD = 0.1
# Looks at most: a decision later than this many evaluations is reported as never.
MAX_LOOKS = 10_000
# Whether the decision is shown at (candidate requests, incumbent requests) counted.
_Decided = Callable[[float, float], bool]


def lognormal_exceedance(median: float, sigma: float, grid: Sequence[float]) -> tuple[float, ...]:
    """P(X > b) at each boundary for a log-normal latency."""
    return tuple(0.5 * math.erfc(math.log(b / median) / (sigma * math.sqrt(2))) for b in grid)


def exceedance_at(
    quantile_value: float, quantile: float, grid: Sequence[float], slowdown: float = 1.0
) -> tuple[float, ...]:
    """P(X > b) per boundary for log-normal latencies (sigma LOG_SPREAD) whose `quantile` is
    `quantile_value` seconds, each taken `slowdown` times longer."""
    median = quantile_value / math.exp(NormalDist().inv_cdf(quantile) * LOG_SPREAD)
    return lognormal_exceedance(median * slowdown, LOG_SPREAD, grid)


@dataclass(frozen=True)
class Comparison:
    """What one latency rule compares: the preset's quantile on its grid, at alpha (split between
    the sides), Fail above max_ratio, Pass within margin (None: not asked)."""

    grid: tuple[float, ...]
    quantile: float
    alpha: float
    max_ratio: float | None
    margin: float | None


def looks_to_fail(
    rule: Comparison, candidate: Sequence[float], incumbent: Sequence[float], per_look: float, share: float
) -> int | None:
    """The evaluation (1-based, after the baseline) at which the expected counts first show the
    candidate above max_ratio x the incumbent, `per_look` requests in all per evaluation at the
    candidate's `share`; None: never within MAX_LOOKS."""
    if rule.max_ratio is None:
        return None
    ratio = rule.max_ratio
    return _first_look(lambda n_c, n_i: _fails(rule, ratio, candidate, incumbent, n_c, n_i), per_look, share)


def looks_to_pass(rule: Comparison, exceedance: Sequence[float], per_look: float, share: float) -> int | None:
    """Likewise, the evaluation at which a candidate as fast as the incumbent passes the margin."""
    if rule.margin is None:
        return None
    margin = rule.margin
    return _first_look(lambda n_c, n_i: _passes(rule, margin, exceedance, n_c, n_i), per_look, share)


def _fails(
    rule: Comparison,
    ratio: float,
    candidate: Sequence[float],
    incumbent: Sequence[float],
    n_c: float,
    n_i: float,
) -> bool:
    half = rule.alpha / 2
    c_above = latency.above([n_c * p for p in candidate], n_c, rule.quantile, half)
    i_at_most = latency.at_most([n_i * p for p in incumbent], n_i, rule.quantile, half)
    return bool(latency.fails(c_above, i_at_most, rule.grid, ratio))


def _passes(rule: Comparison, margin: float, exceedance: Sequence[float], n_c: float, n_i: float) -> bool:
    half = rule.alpha / 2
    c_at_most = latency.at_most([n_c * p for p in exceedance], n_c, rule.quantile, half)
    i_above = latency.above([n_i * p for p in exceedance], n_i, rule.quantile, half)
    return bool(latency.passes(c_at_most, i_above, rule.grid, margin))


def _first_look(decided: _Decided, per_look: float, share: float) -> int | None:
    """The smallest look at which `decided` holds, by doubling then halving: the expected evidence
    only grows with the counts."""
    if not 0 < share < 1 or per_look <= 0:
        return None

    def at(looks: int) -> bool:
        return decided(looks * per_look * share, looks * per_look * (1 - share))

    high = 1
    while not at(high):
        if high >= MAX_LOOKS:
            return None
        high = min(2 * high, MAX_LOOKS)
    low = high // 2  # not decided at low (or low is 0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if at(middle) else (middle, high)
    return high
