"""`modelgate plan`'s estimate for the latency form (cli/plan/latency.py): the evaluation at which
the operator's own bounds on the expected bucket counts decide, checked against the seeded
simulation of docs/statistics.md's table (tooling/latency_sim.py)."""

from __future__ import annotations

import math

from modelgate.cli.plan import latency
from tooling import latency_sim

RULE = latency.Comparison(latency.TTFT_GRID, 0.99, 0.05, max_ratio=1.2, margin=1.5)
INCUMBENT = latency.exceedance_at(0.057, 0.99, latency.TTFT_GRID)


def test_the_estimate_is_near_the_simulated_median_to_fail_and_not_before_it_to_pass() -> None:
    for row in latency_sim.sizing_rows():
        for fail in row.fails:
            assert fail.estimate is not None and abs(fail.estimate - fail.median) <= 1, row
        assert row.passes.estimate is not None and row.passes.estimate >= row.passes.median, row
        assert row.rolled_back <= latency_sim.ALPHA


def test_a_candidate_as_fast_as_the_incumbent_never_fails_and_twice_as_slow_fails_at_once() -> None:
    assert latency.looks_to_fail(RULE, INCUMBENT, INCUMBENT, 600, 0.1) is None
    slower = latency.exceedance_at(0.057, 0.99, latency.TTFT_GRID, slowdown=2.0)
    assert latency.looks_to_fail(RULE, slower, INCUMBENT, 600, 0.1) == 1
    assert latency.looks_to_fail(RULE, slower, INCUMBENT, 600, 0.0) is None  # no candidate traffic


def test_a_larger_share_passes_sooner_up_to_half_and_no_margin_never_passes() -> None:
    looks = [latency.looks_to_pass(RULE, INCUMBENT, 600, share) for share in (0.05, 0.1, 0.25, 0.5)]
    assert all(n is not None for n in looks)
    assert looks == sorted(looks, reverse=True) and looks[0] != looks[-1]
    no_margin = latency.Comparison(RULE.grid, RULE.quantile, RULE.alpha, max_ratio=1.2, margin=None)
    assert latency.looks_to_pass(no_margin, INCUMBENT, 600, 0.5) is None


def test_the_quantile_is_where_it_is_asked_to_be() -> None:
    p99 = latency.exceedance_at(0.07, 0.99, (0.07,))
    p50 = latency.exceedance_at(0.07, 0.5, (0.07,))
    assert math.isclose(p99[0], 0.01, rel_tol=1e-4) and math.isclose(p50[0], 0.5, rel_tol=1e-9)
