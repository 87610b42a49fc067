"""Prometheus errors: below maxConsecutiveErrors the rollout holds; at the limit it pauses (until
`modelgate resume`) or rolls back, as spec.rollback.onPrometheusError says; a run without errors
resets the count."""

from __future__ import annotations

from modelgate.api import Phase, Verdict
from modelgate.core import CommandAction, ConditionType, QueryResult, Reason
from modelgate.core.reasons import condition
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    command,
    event_reasons,
    indefinite_pause,
    live,
    make_spec,
    round_trip,
    weight,
    weights_set,
)


def progressing_at_20(policy: str = "pause", limit: int = 3) -> Simulator:
    sim = Simulator(
        make_spec(weight(20), weight(50), on_prometheus_error=policy, max_consecutive_errors=limit)
    )
    sim.start()
    return sim


def health_reason(sim: Simulator) -> str | None:
    healthy = condition(sim.status.conditions, ConditionType.ANALYSIS_HEALTHY)
    return healthy.reason if healthy else None


def test_errors_below_the_limit_hold_the_step() -> None:
    sim = progressing_at_20(limit=3)
    for errors in (1, 2):
        decision = sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
        assert (decision.status.phase, decision.status.current_step_index) == (Phase.PROGRESSING, 0)
        assert decision.status.consecutive_prometheus_errors == errors
        assert health_reason(sim) == "QueryError"
    assert sim.applied == [20]


def test_errors_at_the_limit_pause_without_promoting() -> None:
    sim = progressing_at_20(limit=3)
    for _ in range(2):
        sim.tick(analysis=Outcome.ERROR, after=INTERVAL)

    decision = sim.tick(analysis=Outcome.ERROR, after=INTERVAL)

    assert (decision.status.phase, decision.status.current_step_index) == (Phase.PAUSED, 0)
    assert weights_set(decision) == []
    assert sim.live_weight == 20
    assert "AnalysisPaused" in event_reasons(decision)
    assert health_reason(sim) == Reason.PROMETHEUS_UNAVAILABLE
    assert "modelgate resume" in (decision.status.message or "")

    more = sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    assert more.status.phase is Phase.PAUSED
    assert "AnalysisPaused" not in event_reasons(more)  # announced once


def test_paused_on_errors_stays_paused_when_prometheus_answers_again() -> None:
    sim = progressing_at_20(limit=1)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    assert sim.phase is Phase.PAUSED

    for _ in range(3):
        decision = sim.tick(analysis=Outcome.PASS, after=INTERVAL)
        assert (decision.status.phase, decision.status.current_step_index) == (Phase.PAUSED, 0)
        assert health_reason(sim) == Reason.PROMETHEUS_UNAVAILABLE
    assert sim.status.consecutive_prometheus_errors == 0
    assert sim.status.analysis[0].verdict is Verdict.PASS  # still recorded
    assert sim.applied == [20]


def test_resume_continues_after_an_error_pause() -> None:
    sim = progressing_at_20(limit=1)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)

    resumed = sim.tick(command=command(CommandAction.RESUME))
    assert (resumed.status.phase, resumed.status.consecutive_prometheus_errors) == (Phase.PROGRESSING, 0)
    assert "Resumed" in event_reasons(resumed)

    advanced = sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert (advanced.status.current_step_index, weights_set(advanced)) == (1, [50])


def test_resume_on_an_indefinite_pause_keeps_waiting_for_promote() -> None:
    sim = Simulator(make_spec(weight(20), indefinite_pause(), weight(100), max_consecutive_errors=1))
    sim.start()
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert (sim.phase, sim.status.current_step_index) == (Phase.PAUSED, 1)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    assert health_reason(sim) == Reason.PROMETHEUS_UNAVAILABLE

    resumed = sim.tick(command=command(CommandAction.RESUME))

    assert (resumed.status.phase, resumed.status.current_step_index) == (Phase.PAUSED, 1)
    promoted = sim.tick(command=command(CommandAction.PROMOTE))
    assert (promoted.status.current_step_index, weights_set(promoted)) == (2, [100])


def test_paused_on_errors_still_reasserts_the_step_weight() -> None:
    sim = progressing_at_20(limit=1)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    sim.route = live(70)

    decision = sim.tick(after=INTERVAL)

    assert (decision.status.phase, weights_set(decision)) == (Phase.PAUSED, [20])


def test_promote_does_not_apply_while_paused_on_errors() -> None:
    sim = progressing_at_20(limit=1)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)

    decision = sim.tick(command=command(CommandAction.PROMOTE))

    assert (decision.status.phase, decision.status.current_step_index) == (Phase.PAUSED, 0)
    assert "CommandIgnored" in event_reasons(decision)


def test_a_breach_while_paused_on_errors_still_rolls_back() -> None:
    sim = progressing_at_20(limit=1)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)

    decision = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)

    assert (decision.status.phase, weights_set(decision)) == (Phase.ROLLED_BACK, [0])


def test_errors_at_the_limit_roll_back_when_the_policy_says_so() -> None:
    sim = progressing_at_20(policy="rollback", limit=2)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)

    decision = sim.tick(analysis=Outcome.ERROR, after=INTERVAL)

    assert (decision.status.phase, weights_set(decision)) == (Phase.ROLLED_BACK, [0])
    reason = decision.status.rollback_reason
    assert reason is not None
    assert reason.metric is None and reason.time == sim.now
    assert "failed 2 times in a row" in reason.message
    assert "PrometheusUnavailable" in " ".join(e.message for e in decision.events)


def test_a_long_error_text_still_makes_a_valid_rollback_reason() -> None:
    sim = progressing_at_20(policy="rollback", limit=1)
    sim.advance(INTERVAL)
    error = QueryResult(error="Prometheus at http://prometheus:9090 answered HTTP 502 " + "<html>" * 500)

    decision = sim.tick(analysis=sim.run(results={"error-rate": error}))

    assert decision.status.phase is Phase.ROLLED_BACK
    assert round_trip(decision.status) == decision.status


def test_a_run_without_errors_resets_the_count() -> None:
    sim = progressing_at_20(limit=3)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)

    sim.tick(analysis=Outcome.FEW_REQUESTS, after=INTERVAL)  # no error, even if not a Pass
    assert sim.status.consecutive_prometheus_errors == 0

    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    assert (sim.phase, sim.status.consecutive_prometheus_errors) == (Phase.PROGRESSING, 2)


def test_a_failed_request_count_is_an_error_for_every_metric() -> None:
    sim = progressing_at_20(limit=3)
    sim.advance(INTERVAL)

    sim.tick(analysis=sim.run(requests=QueryResult(error="cannot connect to Prometheus")))

    assert {m.verdict for m in sim.status.analysis} == {Verdict.ERROR}
    assert sim.status.consecutive_prometheus_errors == 1
