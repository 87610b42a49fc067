"""The mirror step: the candidate's weight stays, a share of the requests is copied to it for the
step's duration, analysis judges it on the copies, and the mirror goes with the write that ends the
step (the next weight, a rollback, a promotion), never later."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import Phase
from modelgate.core import CommandAction, LiveRoute, Reason, next_wakeup
from tests.unit.engine_support import (
    INTERVAL,
    ROUTE_NOT_FOUND,
    Outcome,
    Simulator,
    command,
    event_reasons,
    live,
    make_spec,
    mirror,
    weight,
)

SHADOW_THEN_50 = make_spec(mirror(10, "2m"), weight(50), weight(100))


def route_write(sim: Simulator) -> tuple[int | None, int]:
    """What the last decision asked the router to write: (candidate weight, mirror percent)."""
    decision = sim.ticks[-1]
    return decision.written, decision.mirror_written


def test_a_mirror_step_copies_requests_with_the_candidate_at_weight_0() -> None:
    sim = Simulator(SHADOW_THEN_50)
    decision = sim.start()

    assert route_write(sim) == (0, 10)
    assert decision.status.current_weight == 0
    assert decision.status.current_mirror_percent == 10
    assert Reason.MIRROR_SET in event_reasons(decision)
    assert sim.route == LiveRoute(100, 0, mirror_percent=10)

    following = sim.tick(after=timedelta(seconds=5))
    assert following.written is None  # the mirror is live: nothing to write
    assert following.status.live_mirror_percent == 10


def test_analysis_runs_during_a_mirror_step_although_the_weight_is_0() -> None:
    sim = Simulator(SHADOW_THEN_50)
    sim.start()
    sim.advance(INTERVAL)

    assert sim.analysis_due()
    decision = sim.tick(analysis=Outcome.PASS)
    assert {m.name for m in decision.status.analysis} == {"error-rate", "p99-latency"}


def test_the_step_lasts_its_duration_and_the_next_weight_removes_the_mirror_in_the_same_write() -> None:
    sim = Simulator(SHADOW_THEN_50)
    sim.start()

    early = sim.tick_with_analysis(Outcome.PASS, after=INTERVAL)
    assert early.status.current_step_index == 0  # passing, but the two minutes are not over
    assert "mirroring until" in (early.status.message or "")

    done = sim.tick_with_analysis(Outcome.PASS, after=timedelta(minutes=2))

    assert done.status.current_step_index == 1
    assert route_write(sim) == (50, 0)
    assert event_reasons(done)[-1] == Reason.MIRROR_REMOVED
    assert done.status.current_mirror_percent == 0
    assert sim.route == LiveRoute(50, 50, mirror_percent=0)


def test_a_mirror_step_needs_a_passing_analysis_as_well_as_its_time() -> None:
    sim = Simulator(SHADOW_THEN_50)
    sim.start()

    held = sim.tick_with_analysis(Outcome.FEW_REQUESTS, after=timedelta(minutes=3))

    assert held.status.current_step_index == 0
    assert sim.route == LiveRoute(100, 0, mirror_percent=10)


def test_a_breach_during_the_mirror_step_rolls_back_with_no_mirror_and_no_weight_ever_given() -> None:
    sim = Simulator(SHADOW_THEN_50)
    sim.start()

    rolled_back = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)

    assert rolled_back.status.phase is Phase.ROLLED_BACK
    assert route_write(sim) == (0, 0)  # the weights were 0 already: written for the mirror alone
    assert {Reason.ROLLED_BACK, Reason.MIRROR_REMOVED} <= set(event_reasons(rolled_back))
    assert sim.route == LiveRoute(100, 0, mirror_percent=0)
    assert sim.applied == [0, 0]  # the candidate never had a weight

    finished = sim.tick(after=timedelta(minutes=1))
    assert finished.written is None


def test_abort_and_promote_end_the_mirror() -> None:
    aborted = Simulator(SHADOW_THEN_50)
    aborted.start()
    aborted.tick(command=command(CommandAction.ABORT))
    assert (aborted.phase, aborted.route) == (Phase.ROLLED_BACK, LiveRoute(100, 0, mirror_percent=0))

    promoted = Simulator(SHADOW_THEN_50)
    promoted.start()
    promoted.tick(command=command(CommandAction.PROMOTE))
    assert promoted.status.current_step_index == 1
    assert promoted.route == LiveRoute(50, 50, mirror_percent=0)


def test_a_mirror_step_after_a_set_weight_keeps_the_weight_and_adds_the_copies() -> None:
    sim = Simulator(make_spec(weight(20), mirror(30, "1m"), weight(100), with_analysis=False))
    sim.start()

    mirroring = sim.tick(after=timedelta(seconds=1))

    assert mirroring.status.current_step_index == 1
    assert sim.route == LiveRoute(80, 20, mirror_percent=30)


def test_without_analysis_the_step_ends_on_time_and_the_loop_wakes_for_it() -> None:
    sim = Simulator(make_spec(mirror(10, "5s"), weight(100), with_analysis=False))
    sim.start()
    sim.tick(after=timedelta(seconds=1))  # reads the mirror back

    assert next_wakeup(sim.spec, sim.status, sim.now) == timedelta(seconds=4)
    sim.tick(after=timedelta(seconds=3))
    assert sim.status.current_step_index == 0
    sim.tick(after=timedelta(seconds=1))
    assert sim.status.current_step_index == 1
    assert sim.route == LiveRoute(0, 100, mirror_percent=0)


def test_the_step_waits_for_its_mirror_to_be_live_and_writes_it_again() -> None:
    sim = Simulator(SHADOW_THEN_50)
    sim.start()
    sim.route = live(0)  # someone removed the mirror filter

    decision = sim.tick_with_analysis(Outcome.PASS, after=timedelta(minutes=3))

    assert decision.status.current_step_index == 0
    assert route_write(sim) == (0, 10)
    assert "waiting for weight 0 and a 10% mirror to be live" in (decision.status.message or "")


def test_a_restarted_operator_keeps_mirroring_where_it_was() -> None:
    sim = Simulator(SHADOW_THEN_50, restart_every_tick=True)
    sim.start()
    for _ in range(3):
        sim.tick_with_analysis(Outcome.PASS, after=timedelta(seconds=20))
        assert sim.route == LiveRoute(100, 0, mirror_percent=10)
    assert [d.written for d in sim.ticks] == [0, None, None, None]  # written once


def test_a_write_that_left_the_mirror_out_is_not_applied() -> None:
    sim = Simulator(SHADOW_THEN_50, router_applies=False)  # the route keeps carrying live(0)

    settled = sim.start()

    assert settled.status.live_mirror_percent == 0
    assert event_reasons(settled)[-1] == Reason.WEIGHT_NOT_APPLIED
    assert "after writing 0 and a 10% mirror" in settled.events[-1].message
    assert next_wakeup(sim.spec, settled.status, sim.now) == timedelta(seconds=1)


def test_the_mirror_is_removed_once_the_route_can_be_written_again() -> None:
    sim = Simulator(SHADOW_THEN_50)
    sim.start()
    sim.route = ROUTE_NOT_FOUND

    aborted = sim.tick(command=command(CommandAction.ABORT))

    assert aborted.written is None
    assert aborted.status.current_mirror_percent == 10  # nothing was written, so nothing was removed
    assert Reason.MIRROR_REMOVED not in event_reasons(aborted)

    sim.route = LiveRoute(100, 0, mirror_percent=10)  # the route is back, with the mirror
    returned = sim.tick(after=timedelta(seconds=10))
    assert route_write(sim) == (0, 0)
    assert Reason.MIRROR_REMOVED in event_reasons(returned)
