"""Latency judged with confidence (core/latency.py): each side's quantile
bounded by bucket boundaries from its histogram's counts, anytime-valid; a seeded simulation over
histogram counts bounds the false rollbacks by alpha and catches a 1.5x slower first token."""

from __future__ import annotations

import numpy as np
import pytest

from modelgate.api import BreachRule, MetricSpec, Phase, Verdict
from modelgate.core import QueryResult, SideBuckets, latency
from modelgate.core.judging import unanswered
from tests.unit.engine_support import (
    T0,
    Simulator,
    analysis_run,
    analysis_spec,
    make_spec,
    timed_pause,
    weight,
)
from tests.unit.test_engine_judgement import evaluated, started
from tooling import latency_sim

GRID = (0.04, 0.06, 0.08, 0.1, 0.25)


@pytest.mark.parametrize(
    ("exceeding", "requests", "lower", "upper"),
    [
        ((0, 0, 0, 0, 0), 0, None, None),  # nothing counted: nothing shown
        ((1000, 0, 0, 0, 0), 1000, 0.04, 0.06),  # all in (0.04, 0.06]
        ((1000, 0, 0, 0, 0), 100, 0.04, None),  # too few to show a 1% tail is at most 0.06
        ((1000, 1000, 40, 0, 0), 1000, 0.08, 0.1),  # 4% above 0.08: the P99 is above it
        ((1000, 1000, 10, 0, 0), 1000, 0.06, 0.1),  # 1% above 0.08: neither side of it is shown
        ((1000, 1000, 1000, 1000, 1000), 1000, 0.25, None),  # beyond the last boundary
    ],
    ids=["empty", "one-bucket", "too-few", "above-a-boundary", "at-a-boundary", "beyond-the-grid"],
)
def test_a_quantile_is_bounded_by_the_boundaries_around_it(
    exceeding: tuple[int, ...], requests: int, lower: float | None, upper: float | None
) -> None:
    counts = [float(c) * requests / 1000 for c in exceeding]
    assert latency.bounds(GRID, counts, requests, 0.99, 0.025) == latency.Bounds(lower, upper)


@pytest.mark.parametrize(
    ("candidate", "incumbent", "max_ratio", "margin", "fails", "passes"),
    [
        ((0.08, 0.1), (0.04, 0.06), 1.2, 1.5, True, False),  # above 0.08 against at most 0.06
        ((0.06, 0.08), (0.04, 0.06), 1.2, 1.5, False, False),  # 0.06 < 1.2 x 0.06: not shown
        ((0.06, 0.08), (0.04, 0.06), 1.0, 1.5, True, False),  # 0.06 >= 1 x 0.06: any slower
        ((0.04, 0.06), (0.04, 0.06), 1.2, 1.5, False, True),  # 0.06 <= 1.5 x 0.04 (decimals)
        ((0.04, 0.06), (0.04, 0.06), 1.2, 1.4, False, False),  # the grid cannot show 1.4
    ],
)
def test_fail_and_pass_compare_bounds_across_the_sides(
    candidate: tuple[float, float],
    incumbent: tuple[float, float],
    max_ratio: float,
    margin: float,
    fails: bool,
    passes: bool,
) -> None:
    def shown(lower: float, upper: float) -> tuple[list[bool], list[bool]]:
        return [b <= lower for b in GRID], [b >= upper for b in GRID]

    c_above, c_at_most = shown(*candidate)
    i_above, i_at_most = shown(*incumbent)
    assert latency.fails(c_above, i_at_most, GRID, max_ratio) is fails
    assert latency.passes(c_at_most, i_above, GRID, margin) is passes


TTFT = MetricSpec.model_validate(
    {"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.2, "confidence": {"alpha": 0.05}}}
)
WITH_MARGIN = MetricSpec.model_validate(
    {"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.2, "confidence": {"margin": 1.5}}}
)


def side(total: float, *within: float) -> SideBuckets:
    """A side's histogram as read: its total and its cumulative count at each of GRID's boundaries."""
    value = lambda v: QueryResult(value=v, sample_count=1)  # noqa: E731
    return SideBuckets(value(total), tuple((b, value(w)) for b, w in zip(GRID, within, strict=True)))


def histograms(k: int, candidate_slow: bool) -> tuple[SideBuckets, SideBuckets]:
    """After k intervals of 100 candidate and 900 incumbent requests: the incumbent's all in
    (0.04, 0.06]; the candidate's too, or 5% of them above 0.08 when it is slow."""
    c, i = 100 * k, 900 * k
    slow = 5 * k if candidate_slow else 0
    return side(c, 0, c - slow, c - slow, c, c), side(i, 0, i, i, i, i)


def fed(sim: Simulator, intervals: int, candidate_slow: bool, start: int = 0) -> list:
    decisions = []
    for k in range(start, start + intervals):
        decisions.append(evaluated(sim, buckets={"ttft": histograms(k, candidate_slow)}))
        if decisions[-1].status.phase is not Phase.PROGRESSING:
            break
    return decisions


def test_a_slower_candidate_is_rolled_back_with_both_sides_bounds_as_data() -> None:
    sim = started(TTFT, steps=(weight(10), timed_pause("1h"), weight(100)))
    decisions = fed(sim, 30, candidate_slow=True)
    final = decisions[-1].status
    reason = final.rollback_reason
    assert final.phase is Phase.ROLLED_BACK and reason is not None
    assert (reason.rule, reason.threshold) == (BreachRule.MAX_RATIO, 1.2)
    found = reason.quantile_bounds
    assert found is not None and (found.candidate_lower, found.incumbent_upper) == (0.08, 0.06)
    assert found.alpha == 0.025 and found.quantile == 0.99


def test_with_a_margin_an_equal_candidate_waits_inconclusive_then_passes() -> None:
    sim = started(WITH_MARGIN, steps=(weight(10), timed_pause("1h"), weight(100)))
    verdicts = [d.status.analysis[0].verdict for d in fed(sim, 20, candidate_slow=False)]
    first_pass = verdicts.index(Verdict.PASS)
    assert first_pass >= 2 and set(verdicts[:first_pass]) == {Verdict.INCONCLUSIVE}
    quantiles = sim.status.analysis[0].quantiles
    assert quantiles is not None and quantiles.bounds is not None
    assert quantiles.bounds.candidate_upper == 0.06 and quantiles.bounds.incumbent_lower == 0.04


def test_without_a_margin_an_equal_candidate_passes_and_its_counts_grow_by_differences() -> None:
    sim = started(TTFT, steps=(weight(10), timed_pause("1h"), weight(100)))
    decisions = fed(sim, 4, candidate_slow=False, start=3)
    assert [d.status.analysis[0].verdict for d in decisions][1:] == [Verdict.PASS] * 3
    quantiles = sim.status.analysis[0].quantiles
    assert quantiles is not None and (quantiles.candidate_requests, quantiles.incumbent_requests) == (
        300,
        2700,
    )


def test_a_histogram_that_went_down_counts_nothing_and_is_the_new_baseline() -> None:
    sim = started(TTFT, steps=(weight(10), timed_pause("1h"), weight(100)))
    for reading in (histograms(5, False), histograms(6, False), histograms(1, False), histograms(2, False)):
        evaluated(sim, buckets={"ttft": reading})
    quantiles = sim.status.analysis[0].quantiles
    assert quantiles is not None and (quantiles.candidate_requests, quantiles.incumbent_requests) == (
        200,
        1800,
    )
    assert quantiles.candidate_reading is not None and quantiles.candidate_reading.total == 200


def test_a_slow_candidate_is_not_failed_by_a_rate_comparisons_rules() -> None:
    """The rate machinery keeps to rate presets: a latency preset with confidence counts buckets."""
    assert TTFT.bounds_quantile and not TTFT.counts_events


def test_seeded_simulation_bounds_false_rollbacks_by_alpha_and_catches_one_and_a_half_times() -> None:
    rng = np.random.default_rng(39)
    # The least favourable case of one side's bound: the quantile exactly at a boundary.
    assert latency_sim.null_boundary_miscoverage(rng, 2_000, 30, 250) <= latency_sim.ALPHA / 2
    at_boundary = latency_sim.Side(latency_sim.lognormal_exceedance(0.06 / np.exp(2.326 * 0.1), 0.1))
    shares = latency_sim.changing_shares(30, 0.05, 0.5)
    a_a, _ = latency_sim.first_decisions(
        rng, latency_sim.Rollout(at_boundary, at_boundary, shares, 250), 2_000
    )
    assert latency_sim.summary(a_a)[0] <= latency_sim.ALPHA
    healthy = latency_sim.Side(latency_sim.lognormal_exceedance(0.045, 0.1))
    slower = latency_sim.Side(latency_sim.lognormal_exceedance(0.045 * 1.5, 0.1))
    regressed, _ = latency_sim.first_decisions(
        rng, latency_sim.Rollout(slower, healthy, shares, 250, 1.2), 2_000
    )
    caught, median = latency_sim.summary(regressed)
    assert caught >= 0.95 and median is not None and median <= 20


def test_docs_statistics_has_the_latency_section_the_tooling_writes() -> None:
    from tooling.sequential_sim import DOC

    assert "\n".join(latency_sim.doc_section()) in DOC.read_text()


def test_a_failed_boundary_query_keeps_the_evidence_and_another_grid_restarts_it() -> None:
    sim = started(TTFT, steps=(weight(10), timed_pause("1h"), weight(100)))
    for k in (1, 2):
        evaluated(sim, buckets={"ttft": histograms(k, False)})
    candidate, incumbent = histograms(3, False)
    failed = QueryResult(error="timeout")
    broken = SideBuckets(candidate.total, ((GRID[0], failed), *candidate.within[1:]))
    evaluated(sim, buckets={"ttft": (broken, incumbent)})
    kept = sim.status.analysis[0].quantiles
    assert kept is not None and kept.candidate_requests == 100
    regridded = SideBuckets(candidate.total, candidate.within[1:])
    evaluated(sim, buckets={"ttft": (regridded, incumbent)})
    restarted = sim.status.analysis[0].quantiles
    assert restarted is not None and restarted.boundaries == GRID[1:] and restarted.candidate_requests == 0


def test_a_failed_bucket_query_keeps_traffic_back_naming_the_metric() -> None:
    candidate, incumbent = histograms(1, False)
    broken = SideBuckets(
        candidate.total, ((GRID[0], QueryResult(error="parse error")), *candidate.within[1:])
    )
    run = analysis_run(
        make_spec(weight(10), analysis=analysis_spec([TTFT])), T0, buckets={"ttft": (broken, incumbent)}
    )
    assert [(q.metric, q.error) for q in unanswered(run)] == [("ttft", "parse error")]


def test_histograms_without_a_boundary_of_the_grid_are_inconclusive_naming_the_field() -> None:
    """A server whose buckets are none the preset reads: every query answers, yet no boundary is
    shared; the metric stays Inconclusive and says that waiting will not help."""
    sim = started(TTFT, steps=(weight(10), timed_pause("1h"), weight(100)))
    candidate, incumbent = histograms(1, False)
    unmatched = (SideBuckets(candidate.total, ()), SideBuckets(incumbent.total, ()))
    evaluated(sim, buckets={"ttft": unmatched})
    record = sim.status.analysis[0]
    assert record.verdict is Verdict.INCONCLUSIVE and record.quantiles is None
    assert "compare.confidence" in (record.message or "")
    evaluated(sim, buckets={"ttft": histograms(2, False)})
    assert "compare.confidence" not in (sim.status.analysis[0].message or "")
