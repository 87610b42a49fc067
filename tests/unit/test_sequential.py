"""The confidence sequence on counts (core.sequential): anytime-valid on both sides, and quick to catch
a real regression. Simulated with the operator's own functions on arrays of seeded rollouts
(tooling/sequential_sim.py, which also writes docs/statistics.md)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from modelgate.core.sequential import (
    BASE_GRID,
    Counts,
    fails,
    grid,
    interval,
    log_evidence,
    passes,
    rate_bounds,
    update,
)
from tooling.sequential_sim import Traffic, sequential_rollout
from tooling.statistics_sections import Stretch, detection_times, median_interval, simulate_rollouts

ALPHA = 0.05
MARGIN = 1.25
REQUESTS = 6000  # per interval, both sides: 200 requests/s at a 30 s interval
HALF = 30  # intervals at each share: the share changes mid-rollout


def _four_kinds(ratio: float, seed: int) -> list[float]:
    """10,000 rollouts: base rates 1% and 5%, starting at a share of 10% (then 50%) or 50% (then 10%),
    each looked at every interval for an hour: the decisions' rates per kind, Fail then Pass."""
    rng = np.random.default_rng(seed)
    shares = []
    for base_rate in (0.01, 0.05):
        for first, then in ((0.10, 0.50), (0.50, 0.10)):
            stretches = (Stretch(first, HALF), Stretch(then, HALF))
            decided = simulate_rollouts(rng, 2500, stretches, REQUESTS, base_rate, ratio, MARGIN)
            shares.append((decided.ever_failed, decided.ever_passed))
    return [share for pair in shares for share in pair]


def test_ten_thousand_a_a_rollouts_are_rolled_back_in_at_most_alpha_of_them_and_mostly_pass() -> None:
    rates = _four_kinds(1.0, seed=20261202)
    failed, passed = rates[0::2], rates[1::2]
    print(f"A/A: rolled back {failed}, passed {passed} (alpha {ALPHA}, margin {MARGIN})")
    assert max(failed) <= ALPHA
    assert min(passed) > 0.9  # and an hour is enough to show it, at these rates and shares


def test_ten_thousand_rollouts_at_the_margin_pass_in_at_most_alpha_of_them() -> None:
    rates = _four_kinds(MARGIN, seed=20261203)
    passed = rates[1::2]
    print(f"at the margin: passed {passed} (alpha {ALPHA})")
    assert max(passed) <= ALPHA


def test_three_percent_errors_against_one_percent_at_ten_percent_traffic_is_caught() -> None:
    rng = random.Random(7)
    times = [sequential_rollout(rng, Traffic(0.10, 400, 0.03, 0.01), intervals=120) for _ in range(200)]
    caught = [t for t in times if t is not None]
    assert len(caught) >= 190, f"caught {len(caught)} of 200"
    assert sorted(caught)[len(caught) // 2] <= 40  # median detection within 40 intervals


@pytest.mark.parametrize("share", [0.05, 0.10])
def test_the_weighted_fail_side_catches_a_doubled_rate_sooner_than_the_uniform_one(share: float) -> None:
    """The same seeded traffic for both priors; 500 rollouts, median interval of the first Fail."""
    times = detection_times(share, 2.0, seed=11)
    weighted, uniform, oracle = (median_interval(times[k]) for k in ("weighted", "uniform", "oracle"))
    print(f"{share:.0%} at 2x: weighted {weighted}, uniform {uniform}, oracle {oracle}")
    assert oracle <= weighted < uniform


def test_three_percent_against_one_fails_and_an_a_a_passes_the_margin_after_enough_counts() -> None:
    rate_ratios = grid(1.0, MARGIN)
    worse = update((), rate_ratios, Counts(2000, 60), Counts(18000, 180))
    assert fails(worse, rate_ratios, 1.0, ALPHA) and not passes(worse, rate_ratios, MARGIN, ALPHA)
    same = update((), rate_ratios, Counts(2000, 20), Counts(18000, 180))
    assert not fails(same, rate_ratios, 1.0, ALPHA) and not passes(same, rate_ratios, MARGIN, ALPHA)
    for _ in range(20):  # 20 times the counts: now shown below the margin
        same = update(same, rate_ratios, Counts(2000, 20), Counts(18000, 180))
    assert passes(same, rate_ratios, MARGIN, ALPHA) and not fails(same, rate_ratios, 1.0, ALPHA)
    bounds = interval(same, rate_ratios, ALPHA)
    assert bounds.lower is not None and bounds.upper is not None
    assert bounds.lower < 1.0 < bounds.upper <= MARGIN


def test_no_data_is_no_evidence() -> None:
    rate_ratios = grid(1.0)
    assert log_evidence((), rate_ratios, 1.0, above=True) == 0.0
    start = update((), rate_ratios, Counts(0, 0), Counts(100, 1))
    assert start == (0.0,) * len(rate_ratios)
    assert update(start, rate_ratios, Counts(40, 0), Counts(360, 0)) == start
    assert not fails(start, rate_ratios, 1.0, ALPHA) and not passes(start, rate_ratios, 2.0, ALPHA)
    assert interval(start, rate_ratios, ALPHA) == interval((), rate_ratios, ALPHA)


def test_the_grid_holds_the_decision_points() -> None:
    assert set(BASE_GRID) < set(grid(1.0, 1.25)) and 1.25 in grid(1.0, 1.25) and 1.0 in BASE_GRID
    assert len(grid(1.1, 1.3, 1.7)) <= 32  # status keeps at most 32


@pytest.mark.parametrize(("candidate_events", "direction"), [(12, 1), (0, -1)])
def test_evidence_grows_only_when_the_candidate_has_more_than_its_share(
    candidate_events: int, direction: int
) -> None:
    rate_ratios = grid(1.0)
    ratios = update((), rate_ratios, Counts(100, candidate_events), Counts(900, 12))
    assert math.copysign(1, log_evidence(ratios, rate_ratios, 1.0, above=True)) == direction


def test_a_rates_bounds_hold_its_estimate_and_narrow_with_counts() -> None:
    few, many = rate_bounds(10, 1000, ALPHA), rate_bounds(100, 10_000, ALPHA)
    assert few[0] < many[0] < 0.01 < many[1] < few[1]
    assert rate_bounds(0, 500, ALPHA)[0] == 0.0


@pytest.mark.parametrize(("events", "requests"), [(10**8 - 1, 10**8), (1, 10**8), (10**8, 10**8), (0, 10**8)])
def test_a_rates_bounds_are_excluded_rates_around_the_estimate_at_a_hundred_million_requests(
    events: int, requests: int
) -> None:
    """At the counts of a long rollout: a bisection in the rates once reached 1.0 there and raised."""
    alpha = 0.0005
    lower, upper = rate_bounds(events, requests, alpha, at_zero=0.5)
    estimate = events / requests
    assert 0.0 <= lower <= estimate <= upper <= 1.0 and lower < upper

    def log_likelihood_ratio(rate: float) -> float:  # the estimate's likelihood over the rate's
        misses = requests - events
        hits = events * math.log(estimate / rate) if events else 0.0
        return hits + (misses * math.log((1 - estimate) / (1 - rate)) if misses else 0.0)

    # The mixture's likelihood is at most the estimate's: each bound is excluded at 1/alpha.
    for bound in {lower, upper} - {0.0, 1.0}:
        assert log_likelihood_ratio(bound) >= math.log(1 / alpha) - 1e-6, bound


def test_an_interval_counts_what_the_totals_grew_by_in_whole_events() -> None:
    assert Counts(530, 8.0000000001).since(Counts(500, 4.9999999998)) == Counts(30, 3)
    # A counter that went down was reset (a pod restarted or left): nothing is known of the interval.
    assert Counts(530, 2).since(Counts(500, 5)) is None
    assert Counts(490, 9).since(Counts(500, 5)) is None
