"""The sequential test on counts (core.sequential): anytime-valid under A/A, and quick to catch a real
regression. Simulated with exact binomial draws from a seeded generator."""

from __future__ import annotations

import math
import random

import pytest

from modelgate.core.sequential import GRID, Counts, log_evidence, rejects, update

ALPHA = 0.05


def binomial(rng: random.Random, n: int, p: float) -> int:
    """Exact: successes among n trials, by geometric gaps between them (cheap for small p)."""
    count, position = 0, -1
    log_miss = math.log1p(-p)
    while True:
        position += int(math.log(1.0 - rng.random()) / log_miss) + 1
        if position >= n:
            return count
        count += 1


def rollout(
    rng: random.Random, *, share: float, p_candidate: float, p_incumbent: float, intervals: int, requests: int
) -> int | None:
    """The interval at which the test rejects, or None if it never does."""
    ratios: tuple[float, ...] = ()
    n_c = round(requests * share)
    n_i = requests - n_c
    for interval in range(1, intervals + 1):
        candidate = Counts(n_c, binomial(rng, n_c, p_candidate))
        incumbent = Counts(n_i, binomial(rng, n_i, p_incumbent))
        ratios = update(ratios, candidate, incumbent)
        if rejects(ratios, ALPHA):
            return interval
    return None


def test_ten_thousand_a_a_rollouts_roll_back_at_most_alpha_of_the_time() -> None:
    """Identical candidate and incumbent, looked at every interval for 40 intervals, at traffic
    shares from 5% to 50%: the false-rollback rate stays at or below alpha."""
    rng = random.Random(20261202)
    shares = (0.05, 0.10, 0.25, 0.50)
    runs = 10_000
    false_rollbacks = sum(
        rollout(rng, share=shares[i % 4], p_candidate=0.01, p_incumbent=0.01, intervals=40, requests=400)
        is not None
        for i in range(runs)
    )
    rate = false_rollbacks / runs
    print(f"A/A false-rollback rate: {rate:.4f} over {runs} rollouts (alpha {ALPHA})")
    assert rate <= ALPHA


def test_three_percent_errors_against_one_percent_at_ten_percent_traffic_is_caught() -> None:
    rng = random.Random(7)
    times = [
        rollout(rng, share=0.10, p_candidate=0.03, p_incumbent=0.01, intervals=120, requests=400)
        for _ in range(200)
    ]
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
