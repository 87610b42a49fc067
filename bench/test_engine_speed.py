"""The pure engine's cost per reconcile tick, over a long rollout with five metrics, with and without
the status round trip through JSON that a restart (or every status write) implies."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from bench.report import record, summary
from modelgate.api import MetricSpec, Phase
from modelgate.core.results import evaluation_chance
from tests.unit.engine_support import Simulator, analysis_spec, make_spec, timed_pause, weight
from tests.unit.test_false_rollback import COIN_TOSS

pytestmark = pytest.mark.bench


def long_rollout() -> Simulator:
    steps = []
    for percent in range(2, 100, 4):  # 25 weights, each followed by a short pause: 50 steps
        steps += [weight(percent), timed_pause("10s")]
    metrics = [MetricSpec(name=f"m{i}", query=f"sum(rate(x{i}[1m]))", max=1.0) for i in range(5)]
    # conditions_unread off: it decides each tick twice, which is a test's check, not the engine's cost
    spec = make_spec(*steps, analysis=analysis_spec(metrics, interval="10s"))
    return Simulator(spec, conditions_unread=False)


@pytest.mark.parametrize("restart_every_tick", [False, True], ids=["in-memory", "json-round-trip"])
def test_decide_cost_per_tick(restart_every_tick: bool) -> None:
    sim = long_rollout()
    sim.restart_every_tick = restart_every_tick
    seconds = []
    while sim.phase is not Phase.SUCCEEDED:
        started = time.perf_counter()
        sim.tick_with_analysis(after=timedelta(seconds=5))
        seconds.append(time.perf_counter() - started)
        assert len(seconds) < 10_000, "the rollout should finish"
    name = f"engine-decide-{'json' if restart_every_tick else 'memory'}"
    record(name, {"ticks": len(seconds), "microseconds_per_tick": summary([s * 1e6 for s in seconds])})


def test_a_false_rollback_chance_is_cheap_at_high_traffic() -> None:
    """core/results.py at 200,000 candidate requests: its sums do not grow with the traffic."""
    started = time.perf_counter()
    evaluation_chance(COIN_TOSS, 20, 0.01, 200_000, 2_000_000)
    assert time.perf_counter() - started < 0.05
