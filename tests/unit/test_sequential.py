"""The sequential test on counts (core.sequential): anytime-valid under A/A, and quick to catch a real
regression. Simulated with exact binomial draws from a seeded generator (tooling/sequential_sim.py,
which also writes docs/statistics.md)."""

from __future__ import annotations

import math
import random

import pytest

from modelgate.core.sequential import GRID, Counts, log_evidence, rejects, update
from tooling.sequential_sim import Traffic, sequential_rollout

ALPHA = 0.05


def test_ten_thousand_a_a_rollouts_roll_back_at_most_alpha_of_the_time() -> None:
    """Identical candidate and incumbent, looked at every interval for 40 intervals, at traffic
    shares from 5% to 50%: the false-rollback rate stays at or below alpha."""
    rng = random.Random(20261202)
    shares = (0.05, 0.10, 0.25, 0.50)
    runs = 10_000
    false_rollbacks = sum(
        sequential_rollout(rng, Traffic(shares[i % 4], 400, 0.01, 0.01), intervals=40) is not None
        for i in range(runs)
    )
    rate = false_rollbacks / runs
    print(f"A/A false-rollback rate: {rate:.4f} over {runs} rollouts (alpha {ALPHA})")
    assert rate <= ALPHA


def test_three_percent_errors_against_one_percent_at_ten_percent_traffic_is_caught() -> None:
    rng = random.Random(7)
    times = [sequential_rollout(rng, Traffic(0.10, 400, 0.03, 0.01), intervals=120) for _ in range(200)]
    caught = [t for t in times if t is not None]
    assert len(caught) >= 190, f"caught {len(caught)} of 200"
    assert sorted(caught)[len(caught) // 2] <= 40  # median detection within 40 intervals


def test_no_data_is_no_evidence() -> None:
    assert log_evidence(()) == 0.0
    start = update((), Counts(0, 0), Counts(100, 1))
    assert start == (0.0,) * len(GRID)
    assert update(start, Counts(40, 0), Counts(360, 0)) == start
    assert not rejects(start, ALPHA)


@pytest.mark.parametrize(("candidate_events", "direction"), [(12, 1), (0, -1)])
def test_evidence_grows_only_when_the_candidate_has_more_than_its_share(
    candidate_events: int, direction: int
) -> None:
    ratios = update((), Counts(100, candidate_events), Counts(900, 12))
    assert math.copysign(1, log_evidence(ratios)) == direction


def test_an_interval_counts_what_the_totals_grew_by_in_whole_events() -> None:
    assert Counts(530, 8.0000000001).since(Counts(500, 4.9999999998)) == Counts(30, 3)
    # A counter that went down was reset (a pod restarted or left): nothing is known of the interval.
    assert Counts(530, 2).since(Counts(500, 5)) is None
    assert Counts(490, 9).since(Counts(500, 5)) is None
