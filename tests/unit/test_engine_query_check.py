"""No traffic without a working judge: the analysis's queries answer before the candidate's first
weight, and again after an edit of spec.analysis, or the weight stays where it is and status says
which metric, which address and what error."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import AnalysisSpec, Phase
from modelgate.core import ConditionType, Reason
from modelgate.core.judging import check_due
from modelgate.core.reasons import condition
from modelgate.core.stepping import next_analysis_at
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    analysis_spec,
    event_reasons,
    make_spec,
    weight,
)

UNREACHABLE = "cannot connect to Prometheus at http://127.0.0.1:9: Connection refused"


def unanswering() -> Simulator:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.check_error = UNREACHABLE
    return sim


def test_a_pending_rollout_gives_no_weight_while_its_queries_do_not_answer() -> None:
    sim = unanswering()
    first = sim.tick()
    assert (first.status.phase, first.status.current_weight) == (Phase.PENDING, 0)
    assert Reason.QUERY_UNANSWERED in event_reasons(first)
    for _ in range(3):
        held = sim.tick(after=INTERVAL)
        assert (held.status.phase, held.status.current_weight) == (Phase.PENDING, 0)
        assert Reason.QUERY_UNANSWERED not in event_reasons(held)  # said once
    assert sim.applied == []  # the route's 0 stays
    check = sim.status.analysis_check
    assert check is not None and check.address == "http://prometheus.monitoring:9090"
    assert {q.metric for q in check.unanswered} == {None, "error-rate", "p99-latency"}
    assert {q.error for q in check.unanswered} == {UNREACHABLE}
    ready = condition(sim.status.conditions, ConditionType.ANALYSIS_READY)
    assert ready is not None and (ready.status, ready.reason) == ("False", Reason.QUERY_UNANSWERED)
    assert "error-rate" in ready.message and check.address in ready.message
    assert "spec.analysis.prometheus.address" in (sim.status.message or "")


def test_the_check_is_retried_every_interval_and_the_rollout_proceeds_once_it_answers() -> None:
    sim = unanswering()
    sim.tick()
    assert not check_due(sim.spec, sim.status, sim.now + INTERVAL - timedelta(seconds=1))
    assert check_due(sim.spec, sim.status, sim.now + INTERVAL)
    sim.check_error = None
    answered = sim.tick(after=INTERVAL)
    assert (answered.status.phase, answered.written) == (Phase.PROGRESSING, 20)
    ready = condition(answered.status.conditions, ConditionType.ANALYSIS_READY)
    assert ready is not None and (ready.status, ready.reason) == ("True", Reason.QUERIES_ANSWERED)


def test_no_data_is_an_answer() -> None:
    # Before its first weight the candidate has no traffic: minRequests and the verdicts deal with it.
    for outcome in (Outcome.EMPTY, Outcome.NAN, Outcome.NO_REQUEST_COUNT):
        sim = Simulator(make_spec(weight(20), weight(100)))
        sim.check_outcome = outcome
        assert sim.tick().written == 20


def edited(address: str) -> AnalysisSpec:
    analysis = analysis_spec()
    prometheus = analysis.prometheus.model_copy(update={"address": address})
    return analysis.model_copy(update={"prometheus": prometheus})


def test_an_edit_of_the_analysis_holds_the_weight_until_the_new_queries_answer() -> None:
    sim = Simulator(make_spec(weight(20), weight(50), weight(100)))
    sim.start()
    sim.spec = sim.spec.model_copy(update={"analysis": edited("http://127.0.0.1:9")})
    sim.generation = 2
    sim.check_error = UNREACHABLE
    for _ in range(4):
        held = sim.tick(analysis=Outcome.PASS, after=INTERVAL)  # even a passing run does not advance it
        assert (held.status.phase, held.status.current_step_index, held.status.current_weight) == (
            Phase.PROGRESSING,
            0,
            20,
        )
        assert "holding at weight 20" in (held.status.message or "")
    assert sim.applied == [20]
    assert sim.status.consecutive_prometheus_errors == 0  # a check is not a run: no rollback policy
    sim.check_error = None
    sim.tick(after=INTERVAL)
    for _ in range(2):
        sim.tick_with_analysis(Outcome.PASS, after=INTERVAL)
    assert sim.applied[:2] == [20, 50]


def test_while_an_edit_is_held_the_candidate_is_still_judged_and_a_breach_rolls_back() -> None:
    """The hold stops the steps, not the judge: the metrics that answer keep the candidate in check."""
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()
    sim.spec = sim.spec.model_copy(update={"analysis": edited("http://127.0.0.1:9")})
    sim.generation = 2
    sim.check_error = UNREACHABLE
    held = sim.tick(after=INTERVAL)
    assert (held.status.phase, held.status.current_weight) == (Phase.PROGRESSING, 20)
    assert next_analysis_at(sim.spec, held.status) is not None  # still judged while held
    breached = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert breached.status.phase is Phase.ROLLED_BACK
    assert sim.applied[-1] == 0
