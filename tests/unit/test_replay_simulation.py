"""Replay's simulation: the engine on a simulated clock over recorded metrics (no cluster, no
Prometheus): a breach at a known moment rolls back at the first evaluation after it; history without
one ends every step on schedule."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from modelgate.api import ModelRolloutSpec, Phase, parse_spec
from modelgate.cli.plan.replay import firings, incumbent_against_itself, replay_timeline, start_times
from modelgate.cli.plan.simulation import Replay, simulate
from modelgate.cli.report.charts import chart_specs
from modelgate.cli.report.timeline import steps_from_status, weights_from_status
from modelgate.metrics.provider import plan_queries
from modelgate.metrics.recorded import RecordedProvider, RecordedSeries
from testbed.manifests import model_rollout

START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
INTERVAL = 10  # seconds between evaluations
STEPS = [{"setWeight": 20}, {"pause": {"duration": "30s"}}, {"setWeight": 50}, {"pause": {"duration": "30s"}}]
METRICS = [{"name": "error-rate", "preset": "errorRate", "max": 0.01}]
SPAN = 600  # seconds of recorded history


def _spec() -> ModelRolloutSpec:
    manifest = model_rollout(
        "chat",
        "ml",
        steps=STEPS,
        prometheus="http://prometheus:9090",
        metrics=METRICS,
        interval=f"{INTERVAL}s",
    )
    return parse_spec(manifest["spec"])


def _history(spec: ModelRolloutSpec, error_rate: Callable[[float], float]) -> RecordedProvider:
    """Every query of the spec's plan recorded once a second: plenty of requests, and the error rate
    of the candidate (the metric's query) as `error_rate(seconds since START)` says."""
    plan = RecordedProvider({}).plan(spec, "ml")
    error_query = plan.metrics["error-rate"].candidate
    history = {
        query: RecordedSeries(
            tuple(
                (START.timestamp() + s, error_rate(s) if query == error_query else 1000.0)
                for s in range(SPAN)
            ),
            step=1.0,
        )
        for query in plan_queries(plan)
    }
    return RecordedProvider(history)


def _replay(error_rate: Callable[[float], float]) -> Replay:
    spec = _spec()
    provider = _history(spec, error_rate)
    return simulate(spec, provider, provider.plan(spec, "ml"), START, START + timedelta(seconds=SPAN - 1))


def test_a_breach_rolls_back_at_the_first_evaluation_after_it() -> None:
    breach_at = 47  # seconds: in step 2 (setWeight 50), which started at 40 s (see the test below)
    replay = _replay(lambda s: 0.05 if s >= breach_at else 0.0)
    reason = replay.rollback
    assert replay.phase is Phase.ROLLED_BACK and reason is not None
    assert reason.metric == "error-rate" and reason.value == 0.05
    # The step's first evaluation is one interval after its start: 50 s.
    assert reason.time == START + timedelta(seconds=50)
    assert replay.weights[-1] == (START + timedelta(seconds=50), 0)
    assert replay.status.current_step_index == 2
    assert [w for _, w in replay.weights] == [0, 20, 50, 0]


def test_without_a_breach_steps_end_on_schedule() -> None:
    replay = _replay(lambda s: 0.0)
    assert replay.phase is Phase.SUCCEEDED
    ends = [(span.index, (span.ended_at - START).total_seconds()) for span in replay.steps if span.ended_at]
    # setWeight 20: its first evaluation one interval in (10 s); the pause: 30 s and a passing
    # evaluation (40 s); setWeight 50: one interval (50 s); the pause: 30 s more (80 s).
    assert ends == [(0, 10.0), (1, 40.0), (2, 50.0), (3, 80.0)]
    assert [w for _, w in replay.weights] == [0, 20, 50, 100]


def test_the_reports_reading_of_the_status_history_is_what_the_simulation_applied() -> None:
    """`modelgate report` draws weights and step starts from status.weightChanges and stepStarts:
    read from a simulated rollout's final status, they are the weights its route carried and the
    steps its ticks entered."""
    replay = _replay(lambda s: 0.05 if s >= 47 else 0.0)
    weights = weights_from_status(replay.status, START.timestamp())
    assert [(t, int(w)) for t, w in weights] == [(t.timestamp(), w) for t, w in replay.weights]
    assert steps_from_status(replay.status) == {s.index: s.started_at.timestamp() for s in replay.steps}


def test_aa_counts_the_runs_whose_window_holds_the_incumbents_own_spike() -> None:
    """The incumbent against itself, started every minute: a spike of its own error rate at 100-110 s
    fires only in the run that is still analysing then (a rollout takes 80 s; see above)."""
    aa = incumbent_against_itself(_spec())
    provider = _history(aa, lambda s: 0.05 if 100 <= s < 110 else 0.0)
    plan = provider.plan(aa, "ml")
    assert "chat-v1" in plan.metrics["error-rate"].candidate
    end = START + timedelta(seconds=SPAN - 1)
    runs = [simulate(aa, provider, plan, s, end) for s in start_times(START, end, timedelta(minutes=1))]
    assert len(runs) == 9
    assert [run.start - START for run in runs if run.rollback] == [timedelta(minutes=1)]
    assert firings(runs) == {"error-rate": 1}


def test_the_aa_chart_names_the_incumbents_series_as_the_incumbents() -> None:
    aa = incumbent_against_itself(_spec())
    provider = _history(aa, lambda s: 0.0)
    plan = provider.plan(aa, "ml")
    end = START + timedelta(seconds=SPAN - 1)
    runs = [simulate(aa, provider, plan, START, end)]
    timeline = replay_timeline(aa, plan, provider.history, runs, (START, end), aa=True)
    spec = dict(chart_specs(timeline))["metric error-rate"]
    drawn = {layer["name"]: layer["data"]["values"] for layer in spec["layer"]}
    assert {row["series"] for row in drawn["candidate"]} == {"incumbent"}  # its values are the incumbent's
    assert "incumbent" not in drawn  # not a second time
