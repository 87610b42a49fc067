"""Pass on evidence: a sequential test with a margin holds its step (Inconclusive) until the
confidence sequence lies below the margin; comparisons with confidence judge counts, not a window;
evidence kept on another grid restarts from its last totals, and says so."""

from __future__ import annotations

from modelgate.api import BreachRule, MetricSpec, Phase, SequentialEvidence, Verdict
from modelgate.core import MetricQuery, QueryResult, counted
from tests.unit.engine_support import Simulator, Ticked, analysis_spec, make_spec, timed_pause, weight
from tests.unit.test_engine_judgement import evaluated, started, totals

MARGIN = 1.25
WITH_MARGIN = MetricSpec.model_validate(
    {"name": "errors", "preset": "errorRate", "sequential": {"alpha": 0.05, "margin": MARGIN}}
)


def _fed(
    sim: Simulator, intervals: int, c_rate: float, c_per: int, i_per: int, i_rate: float = 0.01
) -> list[Ticked]:
    """One evaluation per interval, the totals growing by these requests and events per interval."""
    decisions = []
    for i in range(intervals):
        reading = totals(round(c_rate * c_per * i), round(i_rate * i_per * i), c_per * i, i_per * i)
        decisions.append(evaluated(sim, totals={"errors": reading}))
        if decisions[-1].status.phase is not Phase.PROGRESSING:
            break
    return decisions


def test_an_a_a_candidate_waits_inconclusive_until_the_margin_is_shown_then_advances() -> None:
    sim = started(WITH_MARGIN, steps=(weight(50), weight(100)))
    decisions = _fed(sim, 19, 0.01, 4000, 4000)  # within the default 10m inconclusive deadline
    verdicts = [d.status.analysis[0].verdict for d in decisions]
    first_pass = verdicts.index(Verdict.PASS)
    assert first_pass >= 3 and set(verdicts[:first_pass]) == {Verdict.INCONCLUSIVE}
    waiting = decisions[first_pass - 1].status
    assert waiting.current_step_index == 0 and waiting.current_weight == 50
    bounds = decisions[first_pass].status.analysis[0].sequential.bounds  # type: ignore[union-attr]
    assert bounds is not None and bounds.rate_ratio_upper is not None and bounds.rate_ratio_upper <= MARGIN
    assert decisions[first_pass].status.current_step_index == 1  # the Pass advanced the step


def test_a_candidate_at_three_times_the_rate_is_rolled_back_with_the_interval_as_data() -> None:
    sim = started(WITH_MARGIN, steps=(weight(10), timed_pause("1h"), weight(100)))
    decisions = _fed(sim, 60, 0.03, 200, 1800)
    final = decisions[-1].status
    assert final.phase is Phase.ROLLED_BACK
    reason = final.rollback_reason
    assert reason is not None and reason.rule is BreachRule.SEQUENTIAL and reason.threshold == 1.0
    assert reason.bounds is not None and reason.bounds.rate_ratio_lower is not None
    assert reason.bounds.rate_ratio_lower >= 1.0


def test_a_ratio_comparison_with_confidence_fails_on_counts_not_on_one_window() -> None:
    compared = MetricSpec.model_validate(
        {"name": "errors", "preset": "errorRate", "compare": {"maxRatio": 1.5, "confidence": {"alpha": 0.05}}}
    )
    sim = started(compared, steps=(weight(10), timed_pause("1h"), weight(100)))
    # Equal rates: the counts raise no objection.
    first = _fed(sim, 2, 0.01, 200, 1800)
    assert first[-1].status.phase is Phase.PROGRESSING
    sim = started(compared, steps=(weight(10), timed_pause("1h"), weight(100)))
    final = _fed(sim, 60, 0.04, 200, 1800)[-1].status
    reason = final.rollback_reason
    assert final.phase is Phase.ROLLED_BACK and reason is not None
    assert (reason.rule, reason.threshold) == (BreachRule.MAX_RATIO, 1.5)
    assert reason.bounds is not None and reason.bounds.rate_ratio_lower is not None
    assert reason.bounds.rate_ratio_lower >= 1.5


def test_an_increase_comparison_with_confidence_fails_when_the_rates_bounds_are_apart() -> None:
    compared = MetricSpec.model_validate(
        {"name": "errors", "preset": "errorRate", "compare": {"maxIncrease": 0.01, "confidence": {}}}
    )
    sim = started(compared, steps=(weight(10), timed_pause("1h"), weight(100)))
    healthy = _fed(sim, 30, 0.012, 200, 1800)
    assert healthy[-1].status.phase is Phase.PROGRESSING
    sim = started(compared, steps=(weight(10), timed_pause("1h"), weight(100)))
    final = _fed(sim, 60, 0.06, 200, 1800)[-1].status
    reason = final.rollback_reason
    assert final.phase is Phase.ROLLED_BACK and reason is not None
    assert (reason.rule, reason.threshold) == (BreachRule.MAX_INCREASE, 0.01)
    assert reason.bounds is not None and reason.bounds.increase_lower is not None
    assert reason.bounds.increase_lower > 0.01


def test_evidence_from_an_older_operator_restarts_from_its_totals_and_says_so() -> None:
    spec = make_spec(weight(10), timed_pause("1h"), analysis=analysis_spec((WITH_MARGIN,)))
    sim = Simulator(spec)
    sim.start()
    evaluated(sim, totals={"errors": totals(1, 9, 100, 900)})
    kept = sim.status.analysis[0]
    older = SequentialEvidence(  # as an operator before this change stored it: 16 ratios, no grid
        log_likelihood_ratios=(0.5,) * 16,
        log_evidence=0.5,
        candidate_events=1,
        candidate_requests=100,
        incumbent_events=9,
        incumbent_requests=900,
        candidate_totals=kept.sequential.candidate_totals,  # type: ignore[union-attr]
        incumbent_totals=kept.sequential.incumbent_totals,  # type: ignore[union-attr]
    )
    sim.status = sim.status.model_copy(update={"analysis": (kept.model_copy(update={"sequential": older}),)})
    decision = evaluated(sim, totals={"errors": totals(2, 18, 200, 1800)})
    record = decision.status.analysis[0]
    assert record.sequential is not None and len(record.sequential.rate_ratios) == len(
        record.sequential.log_likelihood_ratios
    )
    # Only the interval since the last totals counts: the older evidence is not carried over.
    assert (record.sequential.candidate_events, record.sequential.incumbent_requests) == (1, 900)
    assert record.verdict is Verdict.INCONCLUSIVE and "restarted" in (record.message or "")


def test_a_spec_edit_of_the_margin_restarts_the_evidence() -> None:
    sim = started(WITH_MARGIN, steps=(weight(10), timed_pause("1h"), weight(100)))
    evidence = _fed(sim, 3, 0.01, 200, 1800)[-1].status.analysis[0].sequential
    wider = MetricSpec.model_validate(
        {"name": "errors", "preset": "errorRate", "sequential": {"alpha": 0.05, "margin": 1.5}}
    )
    assert counted.restart_cause(WITH_MARGIN, evidence) is None
    assert counted.restart_cause(wider, evidence) is not None


def test_a_comparison_with_both_rules_judges_each_at_half_its_alpha() -> None:
    """Each rule alone may fail an A/A candidate with chance alpha; the pair, at most alpha."""
    both = MetricSpec.model_validate(
        {
            "name": "errors",
            "preset": "errorRate",
            "compare": {"maxRatio": 1.5, "maxIncrease": 0.01, "confidence": {"alpha": 0.1}},
        }
    )
    read = [
        MetricQuery("q", QueryResult(0.01), QueryResult(0.01), totals(e, e, 100 * e, 100 * e))
        for e in (0, 50)
    ]
    evidence = counted.accumulate(both, read[1], counted.accumulate(both, read[0], None))
    assert evidence is not None and evidence.bounds is not None
    assert evidence.bounds.alpha == 0.05
