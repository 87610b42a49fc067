"""The in-memory applier (core/actions.py): each action's effect on the world, a route write's result
folded into the actions after it as the reconciler folds it, and the engine tests reading what was
applied: with one WriteRoute taken out of the engine's actions, they fail."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase
from modelgate.core import (
    CommandAction,
    Decision,
    Event,
    Observations,
    Reason,
    Router,
    World,
    WriteFailed,
    apply,
    decide,
)
from modelgate.core.actions import decide_deletion
from modelgate.core.gate_judgement import CheckMeasured
from modelgate.core.model import WriteRoute
from modelgate.core.stepping import WRITE_RETRY
from tests.unit import engine_support, test_engine_analysis, test_engine_mirror, test_engine_steps
from tests.unit.engine_support import (
    NOT_LIVE,
    ROUTE_NOT_FOUND,
    T0,
    Outcome,
    Simulator,
    command,
    event_reasons,
    live,
    make_spec,
    observe,
    weight,
)
from tests.unit.test_decision_actions import returning_traffic
from tests.unit.test_engine_gate import GOOD, gated, gating, tick
from tests.unit.test_engine_watch import in_window, watch_spec

STEPS = make_spec(weight(20), weight(100), with_analysis=False)


def reasons(events: tuple[Event, ...]) -> list[Reason]:
    return [event.reason for event in events]


def test_a_step_write_takes_and_the_status_written_says_it_is_live() -> None:
    applied = apply(World(), decide(STEPS, ModelRolloutStatus(), observe(), T0), T0)
    assert applied.world.route == live(20)
    assert applied.world.status.live_weight == 20 == applied.world.status.current_weight
    assert [route.weight for route, _ in applied.writes] == [20]
    assert Reason.WEIGHT_SET in reasons(applied.events)


@pytest.mark.parametrize(
    "router",
    [NOT_LIVE, Router(refusal=WriteFailed("changed under every attempt"))],
    ids=["not live yet", "refused"],
)
def test_a_write_that_did_not_take_leaves_the_route_warns_and_retries_soon(router: Router) -> None:
    applied = apply(World(router=router), decide(STEPS, ModelRolloutStatus(), observe(), T0), T0)
    assert applied.world.route == live(0)
    assert applied.world.status.route_state == "WeightNotApplied"
    assert reasons(applied.events)[-1] is Reason.WEIGHT_NOT_APPLIED
    assert applied.decision.wake_at is not None and applied.decision.wake_at <= T0 + WRITE_RETRY


def test_a_deletion_keeps_the_finalizer_until_the_traffic_is_returned() -> None:
    status = ModelRolloutStatus(phase=Phase.PROGRESSING, current_weight=20, live_weight=20)
    deletion = decide_deletion(returning_traffic(STEPS), status, live(20), has_finalizer=True)
    gone = apply(World(route=ROUTE_NOT_FOUND, finalizer=True), deletion, T0)
    assert [written for _, written in gone.writes] == [ROUTE_NOT_FOUND]
    assert gone.world.finalizer and reasons(gone.events) == [Reason.WEIGHT_NOT_APPLIED]

    returned = apply(World(route=live(20), finalizer=True), deletion, T0)
    assert (returned.world.route, returned.world.finalizer) == (live(0), False)
    assert reasons(returned.events) == [Reason.TRAFFIC_RETURNED]


def test_the_finalizer_and_the_gate_jobs_follow_the_rollout() -> None:
    spec = returning_traffic(make_spec(weight(20), weight(100), with_analysis=False))
    first = apply(World(), decide(spec, ModelRolloutStatus(), observe(), T0), T0)
    assert first.world.finalizer

    gate_spec = gated()
    started = tick(gate_spec, ModelRolloutStatus())
    assert started.world.gate_jobs is not None and started.world.gate_jobs == started.status.gate
    running = replace(World(), gate_jobs=started.world.gate_jobs)
    decided = apply(running, tick(gate_spec, gating(gate_spec), CheckMeasured(GOOD)).decision, T0)
    assert decided.world.gate_jobs is None


def test_the_window_passed_scales_the_incumbent_down_once() -> None:
    sim = in_window(watch_spec(scaleDownIncumbent=True))
    passed = sim.tick_with_analysis(Outcome.PASS, after=timedelta(minutes=3))
    assert passed.world.incumbent_replicas == 0 and passed.scaled_down
    assert Reason.SCALED_DOWN in event_reasons(passed)
    assert not sim.tick(after=timedelta(minutes=5)).scaled_down


def test_a_handled_command_is_cleared_and_a_newer_one_kept() -> None:
    sim = Simulator(STEPS)
    sim.start()
    observed = observe(sim.route, command=command(CommandAction.PROMOTE, "p-1"))
    decision = decide(sim.spec, sim.status, observed, sim.now)
    assert apply(World(command="p-1"), decision, sim.now).world.command is None
    assert apply(World(command="p-2"), decision, sim.now).world.command == "p-2"


# -- the engine tests read the applied world ------------------------------------------------------
Scenario = Callable[[], None]
SCENARIOS: tuple[Scenario, ...] = (
    test_engine_steps.test_set_weight_is_written_once_and_not_repeated_while_waiting,
    test_engine_steps.test_step_advances_on_a_pass_taken_one_interval_after_it_started,
    test_engine_analysis.test_breach_rolls_back_in_the_same_tick,
    test_engine_mirror.test_a_restarted_operator_keeps_mirroring_where_it_was,
)


def without_first_route_write(monkeypatch: pytest.MonkeyPatch) -> list[datetime]:
    """The engine as the simulator calls it, but the first decision that writes the route has its
    WriteRoute taken out (the decision decided again at that tick, with its conditions blanked, too);
    returns when it was dropped."""
    dropped: list[datetime] = []

    def mutated(
        spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, now: datetime
    ) -> Decision:
        decision = decide(spec, status, observed, now)
        writes = any(isinstance(action, WriteRoute) for action in decision.actions)
        if not writes or (dropped and dropped[0] != now):
            return decision
        dropped[:1] = [now]
        kept = tuple(action for action in decision.actions if not isinstance(action, WriteRoute))
        return replace(decision, actions=kept)

    monkeypatch.setattr(engine_support, "decide", mutated)
    return dropped


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda scenario: scenario.__name__)
def test_an_engine_test_fails_when_a_route_write_drops_out_of_the_actions(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario()  # as the operator applies it: passes
    dropped = without_first_route_write(monkeypatch)
    with pytest.raises(AssertionError) as failed:
        scenario()
    assert "a condition was read" not in str(failed.value), "failed for another reason"
    assert dropped, "the scenario wrote the route, and that write was taken out"
