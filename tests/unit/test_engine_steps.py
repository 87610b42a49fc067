"""Walking the steps: setWeight steps wait for live weights and a passing analysis taken at least one
interval into the step; timed pauses wait out their duration; indefinite pauses wait for `promote`;
the last step ends in Succeeded at 100%, and finished rollouts re-assert their weight."""

from __future__ import annotations

import re
from datetime import UTC, timedelta

from modelgate.api import ModelRolloutSpec, Phase
from modelgate.core import CommandAction
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    command,
    event_reasons,
    indefinite_pause,
    live,
    make_spec,
    timed_pause,
    weight,
    weights_set,
)


def test_set_weight_is_written_once_and_not_repeated_while_waiting() -> None:
    sim = Simulator(make_spec(weight(20), weight(100)))
    assert weights_set(sim.start()) == [20]

    for _ in range(3):
        decision = sim.tick(after=timedelta(seconds=5))
        assert weights_set(decision) == []
        assert decision.status.current_step_index == 0


def test_step_waits_for_its_weight_to_be_live() -> None:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()
    sim.route = live(0)  # the router has not applied the write yet

    decision = sim.tick(analysis=Outcome.PASS, after=INTERVAL)

    assert decision.status.current_step_index == 0
    assert weights_set(decision) == [20]  # written again: the live route is not what the step says
    assert "waiting for weight 20 to be live" in (decision.status.message or "")


def test_no_step_finishes_while_the_candidate_is_not_available() -> None:
    sim = Simulator(make_spec(weight(20), weight(50), weight(100)))
    sim.start()
    sim.available = False  # e.g. its pods crash mid-rollout

    held = sim.tick(analysis=Outcome.PASS, after=INTERVAL)

    assert (held.status.current_step_index, held.status.current_weight) == (0, 20)
    assert weights_set(held) == []  # its traffic is held, neither raised nor dropped
    assert "holding: the candidate is not Available" in (held.status.message or "")
    available = next(c for c in held.status.conditions if c.type == "CandidateAvailable")
    assert (available.status, available.reason) == ("False", "NotAvailable")

    sim.available = True
    resumed = sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert resumed.status.current_step_index == 1
    assert weights_set(resumed) == [50]


def test_step_advances_on_a_pass_taken_one_interval_after_it_started() -> None:
    sim = Simulator(make_spec(weight(20), weight(50), weight(100)))
    sim.start()
    started = sim.now

    decision = sim.tick(analysis=Outcome.PASS, after=INTERVAL)

    assert decision.status.current_step_index == 1
    assert weights_set(decision) == [50]
    assert decision.status.step_started_at == started + INTERVAL
    assert "StepCompleted" in event_reasons(decision)


def test_a_pass_taken_too_early_does_not_count() -> None:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()

    early = sim.tick(analysis=Outcome.PASS, after=INTERVAL - timedelta(seconds=1))
    assert early.status.current_step_index == 0
    assert "no analysis yet" in (early.status.message or "")

    # Time alone does not help: the early Pass is still the latest analysis.
    later = sim.tick(after=timedelta(minutes=5))
    assert later.status.current_step_index == 0

    passed = sim.tick(analysis=Outcome.PASS)
    assert passed.status.current_step_index == 1


def test_step_does_not_advance_without_any_analysis() -> None:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()
    for _ in range(5):
        assert sim.tick(after=INTERVAL).status.current_step_index == 0


def test_step_does_not_advance_when_one_metric_is_not_passing() -> None:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()

    sim.advance(INTERVAL)
    decision = sim.tick(analysis=sim.run(Outcome.EMPTY, metric="p99-latency"))

    assert decision.status.current_step_index == 0
    assert "waiting for p99-latency to pass" in (decision.status.message or "")


def test_without_analysis_a_step_advances_once_its_weight_is_live() -> None:
    sim = Simulator(make_spec(weight(20), weight(50), weight(100), with_analysis=False))
    sim.start()
    assert sim.tick().status.current_step_index == 1
    assert sim.tick().status.current_step_index == 2
    assert sim.tick().status.phase is Phase.SUCCEEDED
    assert sim.applied == [20, 50, 100]


def test_weight_zero_steps_need_no_analysis() -> None:
    sim = Simulator(make_spec(weight(0), weight(20), weight(100)))

    decision = sim.start()

    # Weight 0 is live already: the step completes at once and step 1 starts in the same tick.
    assert (decision.status.current_step_index, weights_set(decision)) == (1, [20])


def test_timed_pause_waits_for_its_duration_from_step_started_at() -> None:
    sim = Simulator(make_spec(weight(20), timed_pause("2m"), weight(100)))
    sim.start()
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert sim.status.current_step_index == 1
    pause_started = sim.now

    almost = sim.tick(analysis=Outcome.PASS, after=timedelta(minutes=2) - timedelta(seconds=1))
    assert almost.status.current_step_index == 1
    ends = (pause_started + timedelta(minutes=2)).astimezone(UTC)
    assert f"paused until {ends:%Y-%m-%d %H:%M:%S} UTC" in (almost.status.message or "")  # no microseconds

    done = sim.tick(analysis=Outcome.PASS, after=timedelta(seconds=1))
    assert sim.now == pause_started + timedelta(minutes=2)
    assert done.status.current_step_index == 2
    assert weights_set(done) == [100]


def test_timed_pause_with_traffic_also_needs_a_passing_analysis() -> None:
    sim = Simulator(make_spec(weight(20), timed_pause("1m"), weight(100)))
    sim.start()
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)

    inconclusive = sim.tick(analysis=Outcome.FEW_REQUESTS, after=timedelta(minutes=1))
    assert inconclusive.status.current_step_index == 1

    passed = sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert passed.status.current_step_index == 2


def test_timed_pause_at_weight_zero_needs_only_time() -> None:
    sim = Simulator(make_spec(timed_pause("1m"), weight(100)))
    sim.start()
    assert sim.tick(after=timedelta(seconds=59)).status.current_step_index == 0
    assert sim.tick(after=timedelta(seconds=1)).status.current_step_index == 1


def test_indefinite_pause_holds_in_paused_until_promoted() -> None:
    sim = Simulator(make_spec(weight(20), indefinite_pause(), weight(60), weight(100)))
    sim.start()
    entering = sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert (entering.status.phase, entering.status.current_step_index) == (Phase.PAUSED, 1)
    assert "Paused" in event_reasons(entering)

    for _ in range(3):
        held = sim.tick(analysis=Outcome.PASS, after=timedelta(hours=1))
        assert (held.status.phase, held.status.current_step_index, sim.live_weight) == (Phase.PAUSED, 1, 20)

    promoted = sim.tick(command=command(CommandAction.PROMOTE))
    assert (promoted.status.phase, promoted.status.current_step_index) == (Phase.PROGRESSING, 2)
    assert weights_set(promoted) == [60]
    assert "Promoted" in event_reasons(promoted)


def test_promote_full_skips_every_remaining_step() -> None:
    sim = Simulator(make_spec(weight(20), indefinite_pause(), weight(60), weight(100)))
    sim.start()
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert sim.status.phase is Phase.PAUSED

    decision = sim.tick(command=command(CommandAction.PROMOTE_FULL))

    assert (decision.status.phase, decision.status.current_weight) == (Phase.SUCCEEDED, 100)
    assert weights_set(decision) == [100]
    assert sim.applied == [20, 100]


def test_last_step_done_succeeds_at_weight_100() -> None:
    sim = Simulator(make_spec(weight(20), weight(50)))
    sim.start()
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)

    decision = sim.tick(analysis=Outcome.PASS, after=INTERVAL)

    status = decision.status
    assert (status.phase, status.current_weight, status.current_step_index) == (Phase.SUCCEEDED, 100, 2)
    assert weights_set(decision) == [100]
    assert "RolloutSucceeded" in event_reasons(decision)
    assert sim.applied == [20, 50, 100]


def test_the_crds_description_of_the_last_step_says_the_weight_the_engine_gives() -> None:
    """spec.steps' description (the CRD's, api-reference.md's) states what follows the last step."""
    description = ModelRolloutSpec.model_fields["steps"].description or ""
    after_last = description.split("After the last step", 1)[1]
    promised = re.search(r"(\d+)% of the traffic", after_last)
    sim = Simulator(make_spec(weight(20), weight(50)))
    sim.start()
    for _ in range(2):
        sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert promised is not None and sim.phase is Phase.SUCCEEDED
    assert sim.live_weight == int(promised.group(1))


def test_succeeded_reasserts_100_when_the_route_drifts() -> None:
    sim = Simulator(make_spec(weight(100), with_analysis=False))
    sim.start()
    sim.tick()
    assert sim.phase is Phase.SUCCEEDED

    assert weights_set(sim.tick()) == []
    sim.route = live(70)
    decision = sim.tick()

    assert (decision.status.phase, weights_set(decision)) == (Phase.SUCCEEDED, [100])


def test_rolled_back_reasserts_0_when_the_route_drifts() -> None:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()
    sim.tick(command=command(CommandAction.ABORT))
    assert (sim.phase, sim.live_weight) == (Phase.ROLLED_BACK, 0)

    sim.route = live(20)
    decision = sim.tick(after=timedelta(minutes=1))

    assert (decision.status.phase, weights_set(decision)) == (Phase.ROLLED_BACK, [0])


def test_progressing_reasserts_the_step_weight_when_the_route_drifts() -> None:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()
    sim.route = live(90)

    decision = sim.tick(after=timedelta(seconds=5))

    assert (decision.status.current_step_index, weights_set(decision)) == (0, [20])
