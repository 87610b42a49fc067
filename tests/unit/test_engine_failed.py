"""Failed never strands traffic: a spec the operator cannot use, a route that cannot be read, a
deadline that fails, each ends Failed at weight 0; a query that cannot be built fails only a rollout
whose candidate has no traffic yet, and otherwise is an analysis error, held or rolled back by
spec.rollback while the other metrics go on judging."""

from __future__ import annotations

from modelgate.api import ModelRolloutSpec, Phase
from modelgate.core import QueryResult, Reason, SpecProblem, decide_unusable
from tests.unit.engine_support import (
    DEFAULT_METRICS,
    INTERVAL,
    NOT_LIVE,
    T0,
    Outcome,
    Simulator,
    as_applied,
    event_reasons,
    failing_value,
    indefinite_pause,
    live,
    make_spec,
    simulator_in,
    weight,
    weights_set,
)

UNUSABLE = SpecProblem("spec.analysis.prometheus: no metric provider")
UNBUILDABLE = SpecProblem("spec.analysis.metrics[0].query (metric error-rate): unknown variable model")
UNBUILT = QueryResult(error=f"the query cannot be built: {UNBUILDABLE.message}")


def spec(on_prometheus_error: str = "pause") -> ModelRolloutSpec:
    return make_spec(
        weight(20),
        indefinite_pause(),
        weight(100),
        on_prometheus_error=on_prometheus_error,
        max_consecutive_errors=2,
    )


def test_an_unusable_spec_fails_an_active_rollout_and_returns_its_traffic() -> None:
    sim = simulator_in(Phase.PAUSED, spec())
    failed = as_applied(decide_unusable(UNUSABLE, sim.status, 2, T0), live(20), router=NOT_LIVE)
    assert (failed.status.phase, failed.status.current_weight, failed.written) == (Phase.FAILED, 0, 0)
    assert failed.outcome is not None and failed.outcome.reason is Reason.INVALID_SPEC
    # the write did not take: asked again
    again = as_applied(decide_unusable(UNUSABLE, failed.status, 2, T0), live(20), router=NOT_LIVE)
    assert (again.written, again.events) == (0, ())
    returned = failed.status.model_copy(update={"live_weight": 0})
    assert as_applied(decide_unusable(UNUSABLE, returned, 2, T0)).written is None


def test_an_unusable_spec_leaves_a_finished_rollout_as_it_is() -> None:
    for phase in (Phase.SUCCEEDED, Phase.ROLLED_BACK):
        status = simulator_in(phase, spec()).status
        decision = as_applied(decide_unusable(UNUSABLE, status, 2, T0))
        assert (decision.status.phase, decision.status.current_weight, decision.written) == (
            phase,
            status.current_weight,
            None,
        )
        assert event_reasons(decision) == [Reason.INVALID_SPEC]


def test_an_unbuildable_query_fails_a_rollout_before_its_candidate_has_traffic() -> None:
    sim = Simulator(spec(), query_problem=UNBUILDABLE)
    failed = sim.start()
    assert (failed.status.phase, failed.status.current_weight, weights_set(failed)) == (Phase.FAILED, 0, [])
    assert failed.status.message == UNBUILDABLE.message


def test_an_unbuildable_query_with_traffic_holds_by_policy_and_the_other_metrics_still_judge() -> None:
    sim = simulator_in(Phase.PAUSED, spec("pause"))  # weight 20
    sim.query_problem = UNBUILDABLE
    unbuilt = {DEFAULT_METRICS[0].name: UNBUILT}
    for _ in range(2):
        held = sim.tick(analysis=sim.run(results=unbuilt), after=INTERVAL)
        assert held.status.phase is Phase.PAUSED and sim.live_weight == 20
    assert held.status.consecutive_prometheus_errors == 2  # paused on errors: until `modelgate resume`
    other = DEFAULT_METRICS[1]
    breach = {**unbuilt, other.name: QueryResult(value=failing_value(other), sample_count=1)}
    rolled = sim.tick(analysis=sim.run(results=breach), after=INTERVAL)
    assert (rolled.status.phase, sim.live_weight) == (Phase.ROLLED_BACK, 0)
    assert rolled.status.rollback_reason is not None and rolled.status.rollback_reason.metric == other.name


def test_an_unbuildable_query_with_traffic_rolls_back_when_the_policy_says_so() -> None:
    sim = simulator_in(Phase.PAUSED, spec("rollback"))
    sim.query_problem = UNBUILDABLE
    for _ in range(2):
        decision = sim.tick(analysis=sim.run(results={DEFAULT_METRICS[0].name: UNBUILT}), after=INTERVAL)
    assert (decision.status.phase, sim.live_weight) == (Phase.ROLLED_BACK, 0)


def test_a_deadline_that_fails_returns_the_traffic() -> None:
    document = spec().model_dump(by_alias=True, exclude_none=True)
    document["progressDeadlines"] = {"inconclusive": {"after": "1m", "action": "fail"}}
    sim = Simulator(ModelRolloutSpec.model_validate(document))
    sim.start()
    for _ in range(4):
        decision = sim.tick(analysis=Outcome.FEW_REQUESTS, after=INTERVAL)
    assert (decision.status.phase, decision.status.current_weight, sim.live_weight) == (Phase.FAILED, 0, 0)
