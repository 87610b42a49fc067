"""A tick posts its routine progress as one Event and every Warning on its own."""

from __future__ import annotations

from modelgate.core import Event, EventType, Reason, events_to_post
from tests.unit.engine_support import Simulator, make_spec, timed_pause, weight


def test_a_step_transition_is_one_event_named_after_the_new_step() -> None:
    sim = Simulator(make_spec(weight(20), weight(50), with_analysis=False))
    sim.start()
    ticked = sim.tick()
    reasons = [event.reason for event in ticked.events]
    assert reasons == [Reason.STEP_COMPLETED, Reason.WEIGHT_SET]
    (posted,) = events_to_post(ticked.events)
    assert posted.reason is Reason.WEIGHT_SET
    assert posted.message == "; ".join(event.message for event in ticked.events)


def test_the_start_and_the_end_name_the_combined_event() -> None:
    sim = Simulator(make_spec(weight(20), timed_pause("5s"), with_analysis=False))
    started = sim.tick()
    named = {event.reason for event in started.events}
    assert {Reason.NEW_ROLLOUT, Reason.ROLLOUT_STARTED, Reason.WEIGHT_SET} <= named
    assert [event.reason for event in events_to_post(started.events)] == [Reason.NEW_ROLLOUT]
    ended = [Event(Reason.STEP_COMPLETED, "step 1 completed"), Event(Reason.ROLLOUT_SUCCEEDED, "promoted")]
    assert events_to_post(tuple(ended)) == (Event(Reason.ROLLOUT_SUCCEEDED, "step 1 completed; promoted"),)


def test_warnings_stay_separate_and_in_order() -> None:
    events = (
        Event(Reason.RETRY, "retrying"),
        Event(Reason.PROGRESS_DEADLINE_EXCEEDED, "deadline"),
        Event(Reason.ROLLOUT_STARTED, "available"),
        Event(Reason.ROLLED_BACK, "rolled back"),
    )
    posted = events_to_post(events)
    assert posted == (
        Event(Reason.RETRY, "retrying; available"),
        Event(Reason.PROGRESS_DEADLINE_EXCEEDED, "deadline"),
        Event(Reason.ROLLED_BACK, "rolled back"),
    )
    assert [event.type for event in posted] == [EventType.NORMAL, EventType.WARNING, EventType.WARNING]


def test_a_single_event_is_posted_as_it_is() -> None:
    alone = (Event(Reason.RESUMED, "resumed"),)
    assert events_to_post(alone) == alone
    assert events_to_post(()) == ()
