"""A zero-error service can pass: sequential.marginIncrease (a margin in rate points) is shown with no
events at all, after log(4/alpha)/marginIncrease candidate requests; a ratio margin never is, and the
pause at the inconclusive deadline says so as data. A breach the counts already show fails whatever
minRequests says."""

from __future__ import annotations

import math

import pytest

from modelgate.api import BreachRule, MetricSpec, PauseReason, Phase, SequentialEvidence, Verdict
from modelgate.core import counted
from tests.unit.engine_support import Outcome, Simulator, analysis_spec, make_spec, timed_pause, weight
from tests.unit.test_engine_judgement import evaluated, started, totals
from tests.unit.test_engine_margin import WITH_MARGIN, _fed

ALPHA, INCREASE = 0.05, 0.001
WITH_INCREASE = MetricSpec.model_validate(
    {"name": "errors", "preset": "errorRate", "sequential": {"alpha": ALPHA, "marginIncrease": INCREASE}}
)


def zero_error_requests(alpha: float, increase: float) -> int:
    """docs/statistics.md's number: the candidate's upper bound at alpha/2, with half its prior on a
    rate of 0, is below the margin once (1 - margin)^n <= alpha/4."""
    return math.ceil(math.log(4 / alpha) / -math.log1p(-increase))


def _no_events(candidate: float, incumbent: float) -> SequentialEvidence:
    return SequentialEvidence(
        log_likelihood_ratios=(),
        log_evidence=0.0,
        candidate_events=0,
        candidate_requests=candidate,
        incumbent_events=0,
        incumbent_requests=incumbent,
    )


@pytest.mark.parametrize(("alpha", "increase"), [(0.05, 0.001), (0.01, 0.005), (0.2, 0.0001)])
def test_with_no_events_the_increase_is_shown_after_log_4_over_alpha_over_the_margin(
    alpha: float, increase: float
) -> None:
    needed = zero_error_requests(alpha, increase)
    assert counted.increase_upper(_no_events(needed, 9 * needed), alpha) < increase
    assert counted.increase_upper(_no_events(round(0.95 * needed), 9 * needed), alpha) > increase


def test_an_event_on_the_incumbent_or_the_candidate_changes_the_bound_as_it_should() -> None:
    needed = zero_error_requests(ALPHA, INCREASE)
    clean = counted.increase_upper(_no_events(needed, 9 * needed), ALPHA)
    one = _no_events(needed, 9 * needed).model_copy(update={"candidate_events": 1})
    assert counted.increase_upper(one, ALPHA) > clean  # the point mass at 0 is gone


def test_a_zero_error_candidate_passes_after_the_documented_requests_and_succeeds() -> None:
    """The evidence is the rollout's since it began: the first step waits for the documented
    requests, each later one passes at its first evaluation."""
    sim = started(WITH_INCREASE, steps=(weight(10), weight(50), weight(100)))
    per_interval = 500  # candidate requests per 30 s interval
    decisions = _fed(sim, 40, 0.0, per_interval, 9 * per_interval, i_rate=0.0)
    assert decisions[-1].status.phase is Phase.SUCCEEDED
    verdicts = [d.status.analysis[0].verdict for d in decisions]
    first_pass = verdicts.index(Verdict.PASS)
    evidence = decisions[first_pass].status.analysis[0].sequential
    assert evidence is not None and evidence.bounds is not None
    needed = zero_error_requests(ALPHA, INCREASE)
    assert needed <= evidence.candidate_requests < needed + per_interval
    assert evidence.bounds.increase_upper is not None and evidence.bounds.increase_upper < INCREASE
    assert set(verdicts[:first_pass]) == {Verdict.INCONCLUSIVE}
    assert set(verdicts[first_pass:]) == {Verdict.PASS}
    assert len(verdicts) - first_pass == 3  # one evaluation a step


def test_a_ratio_margin_at_zero_events_pauses_at_its_deadline_naming_the_metric() -> None:
    sim = started(WITH_MARGIN, steps=(weight(10), weight(100)))
    decisions = _fed(sim, 40, 0.0, 500, 4500, i_rate=0.0)
    final = decisions[-1].status
    assert final.phase is Phase.PAUSED
    assert final.pause is not None and final.pause.reason is PauseReason.INCONCLUSIVE_DEADLINE
    assert final.pause.metrics_without_events == ("errors",)
    assert final.current_step_index == 0


def test_a_pause_with_events_names_no_metric_without_events() -> None:
    sim = started(WITH_MARGIN, steps=(weight(10), weight(100)))
    final = _fed(sim, 40, 0.01, 20, 180)[-1].status  # too few events to show the margin in 10m
    assert final.pause is not None and final.pause.reason is PauseReason.INCONCLUSIVE_DEADLINE
    assert final.pause.metrics_without_events == ()


def test_a_spec_edit_of_the_increase_margin_restarts_the_evidence() -> None:
    sim = started(WITH_INCREASE, steps=(weight(10), timed_pause("1h"), weight(100)))
    evidence = _fed(sim, 3, 0.0, 200, 1800, i_rate=0.0)[-1].status.analysis[0].sequential
    wider = MetricSpec.model_validate(
        {"name": "errors", "preset": "errorRate", "sequential": {"alpha": ALPHA, "marginIncrease": 0.01}}
    )
    assert counted.restart_cause(WITH_INCREASE, evidence) is None
    assert counted.restart_cause(wider, evidence) is not None
    assert counted.restart_cause(WITH_MARGIN, evidence) is not None


def test_a_breach_the_counts_already_show_fails_below_min_requests() -> None:
    spec = make_spec(
        weight(10), timed_pause("1h"), analysis=analysis_spec((WITH_INCREASE,), min_requests=100_000)
    )
    sim = Simulator(spec)
    sim.start()
    evaluated(sim, Outcome.FEW_REQUESTS, totals={"errors": totals(0, 0, 0, 0)})  # the baseline
    breach = evaluated(sim, Outcome.FEW_REQUESTS, totals={"errors": totals(40, 9, 200, 1800)})
    assert breach.status.phase is Phase.ROLLED_BACK
    reason = breach.status.rollback_reason
    assert reason is not None and reason.rule is BreachRule.SEQUENTIAL
