"""Restarts: every wait is computed from timestamps in status, so a status read back from its JSON
form (as after an operator restart) gives the same decisions."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import Phase
from modelgate.core import CommandAction, decide
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    analysis_run,
    as_applied,
    command,
    effects,
    indefinite_pause,
    live,
    make_spec,
    observe,
    round_trip,
    timed_pause,
    weight,
)


def test_a_timed_pause_resumes_from_step_started_at_after_a_restart() -> None:
    sim = Simulator(make_spec(weight(20), timed_pause("10m"), weight(100)))
    sim.start()
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    pause_started = sim.now
    sim.tick(analysis=Outcome.PASS, after=timedelta(minutes=4))

    # The operator was down for 5 minutes and reads the status back from the API server.
    restored = round_trip(sim.status)
    assert restored == sim.status
    assert restored.step_started_at == pause_started

    one_second_early = pause_started + timedelta(minutes=10) - timedelta(seconds=1)
    early_run = analysis_run(sim.spec, one_second_early)
    held = as_applied(decide(sim.spec, restored, observe(live(20), analysis=early_run), one_second_early))
    assert held.status.current_step_index == 1
    assert effects(held) == (None, ())

    pause_end = pause_started + timedelta(minutes=10)
    on_time = decide(
        sim.spec, restored, observe(live(20), analysis=analysis_run(sim.spec, pause_end)), pause_end
    )
    assert on_time.status.current_step_index == 2


def test_a_whole_rollout_decides_the_same_with_a_restart_between_every_tick() -> None:
    def play(sim: Simulator) -> None:
        sim.start()
        sim.tick(analysis=Outcome.FEW_REQUESTS, after=INTERVAL)
        sim.tick(analysis=Outcome.PASS, after=INTERVAL)
        sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
        sim.tick(analysis=Outcome.PASS, after=timedelta(minutes=1))
        sim.tick(analysis=Outcome.PASS, after=INTERVAL)
        sim.tick(command=command(CommandAction.PROMOTE), after=timedelta(seconds=3))
        sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
        sim.tick(command=command(CommandAction.RETRY, "retry-2"), after=timedelta(hours=1))
        for _ in range(4):
            sim.tick_with_analysis(Outcome.PASS, after=INTERVAL)

    spec = make_spec(weight(10), timed_pause("1m"), indefinite_pause(), weight(50), weight(100))
    steady, restarting = Simulator(spec), Simulator(spec, restart_every_tick=True)
    play(steady)
    play(restarting)

    assert [effects(d) for d in restarting.ticks] == [effects(d) for d in steady.ticks]
    assert restarting.status == steady.status
    assert restarting.applied == steady.applied
    assert (steady.phase, steady.status.current_step_index) == (Phase.PAUSED, 2)


def test_a_status_with_everything_set_round_trips() -> None:
    sim = Simulator(make_spec(weight(20), weight(100), max_consecutive_errors=5))
    sim.start()
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    sim.tick(analysis=Outcome.NAN, after=INTERVAL)
    sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert sim.status.rollback_reason is not None and sim.status.analysis and sim.status.conditions

    assert round_trip(sim.status) == sim.status
