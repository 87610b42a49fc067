"""What a weight write returned, folded into the decision (core.settle_write), and the outcome, the
command result and the unusable-spec path the reconciler no longer decides by itself."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import CommandResult, Phase
from modelgate.core import (
    CommandAction,
    ConditionType,
    LiveRoute,
    Reason,
    SpecProblem,
    WriteFailed,
    decide,
    decide_unusable,
    next_wakeup,
    settle_write,
)
from modelgate.core.conditions import condition
from modelgate.core.schedule import RESYNC, WRITE_RETRY
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    command,
    event_reasons,
    live,
    make_spec,
    observe,
    simulator_in,
    weight,
)


def started() -> Simulator:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.router_applies = False
    return sim


def test_a_write_that_took_records_the_live_weight() -> None:
    sim = started()
    decision = sim.start()
    assert decision.weight == 20

    settled = settle_write(sim.status, decision, live(20), sim.now, 1)

    assert settled.status.live_weight == 20
    assert settled.events == decision.events
    assert next_wakeup(sim.spec, settled.status, sim.now) <= RESYNC
    # the decision's one wake-up is the schedule's over the settled status
    assert settled.wake_at == sim.now + next_wakeup(sim.spec, settled.status, sim.now)


def test_a_write_that_did_not_take_is_a_warning_once_and_a_quick_retry() -> None:
    sim = started()
    before = sim.status
    decision = sim.start()

    first = settle_write(before, decision, live(7), sim.now, 1)  # a webhook rewrote it

    ready = condition(first.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and (ready.status, ready.reason) == ("False", Reason.WEIGHT_NOT_APPLIED)
    assert "carries candidate weight 7 after writing 20" in ready.message
    assert first.status.live_weight == 7
    assert event_reasons(first)[-1] is Reason.WEIGHT_NOT_APPLIED
    assert next_wakeup(sim.spec, first.status, sim.now) == WRITE_RETRY
    assert decision.wake_at is not None and decision.wake_at > sim.now + WRITE_RETRY
    assert first.wake_at == sim.now + WRITE_RETRY, "settling brings the wake-up forward"

    # The next tick still sees 7: it writes again, and the problem is not reported a second time.
    again = decide(sim.spec, first.status, observe(live(7)), sim.now + WRITE_RETRY)
    assert again.weight == 20
    kept = condition(again.status.conditions, ConditionType.ROUTE_READY)
    assert kept is not None and kept.reason == Reason.WEIGHT_NOT_APPLIED
    second = settle_write(first.status, again, WriteFailed("changed under every attempt"), sim.now, 1)
    assert Reason.WEIGHT_NOT_APPLIED not in event_reasons(second)

    # Once the route carries the weight, RouteReady is True again and the wake-ups are normal.
    healed = decide(sim.spec, second.status, observe(live(20)), sim.now + 2 * WRITE_RETRY)
    ready = condition(healed.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and (ready.status, ready.reason) == ("True", Reason.ROUTE_FOUND)
    assert healed.status.live_weight == 20 and healed.weight is None


def test_no_step_completes_while_a_write_has_not_taken() -> None:
    sim = Simulator(make_spec(weight(20), weight(100), with_analysis=False))
    sim.router_applies = False
    sim.start()
    decision = sim.tick(after=INTERVAL)
    assert (decision.status.current_step_index, decision.weight) == (0, 20)


def test_outcomes_say_how_and_why_a_rollout_ended() -> None:
    rolled_back = simulator_in(Phase.PROGRESSING)
    decision = rolled_back.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert decision.outcome is not None
    assert (decision.outcome.phase, decision.outcome.reason) == (Phase.ROLLED_BACK, Reason.METRIC_BREACH)
    assert rolled_back.tick(after=INTERVAL).outcome is None  # said once

    aborted = simulator_in(Phase.PAUSED).tick(command=command(CommandAction.ABORT))
    assert aborted.outcome is not None and aborted.outcome.reason is Reason.ABORTED

    promoted = simulator_in(Phase.PAUSED).tick(command=command(CommandAction.PROMOTE_FULL))
    assert promoted.outcome is not None and promoted.outcome.phase is Phase.SUCCEEDED


def test_an_applied_command_says_what_it_did() -> None:
    sim = simulator_in(Phase.PAUSED)
    decision = sim.tick(command=command(CommandAction.PROMOTE, "p-1"))
    handled = decision.status.last_command
    assert handled is not None and (handled.id, handled.name, handled.result) == (
        "p-1",
        "promote",
        CommandResult.APPLIED,
    )
    assert "step 1 finished by hand" in handled.message
    again = sim.tick(command=command(CommandAction.PROMOTE, "p-1"))
    assert again.status.last_command == handled, "a command is handled once"
    assert again.status.current_step_index == decision.status.current_step_index


def test_an_unusable_spec_fails_the_rollout_once_and_leaves_the_route_alone() -> None:
    sim = simulator_in(Phase.PROGRESSING)
    problem = SpecProblem("spec.analysis.metrics[0].query: unknown variable 'podz'")

    failed = decide_unusable(problem, sim.status, 2, sim.now)

    assert (failed.status.phase, failed.status.message) == (Phase.FAILED, problem.message)
    assert failed.weight is None
    assert event_reasons(failed) == [Reason.INVALID_SPEC]
    assert failed.outcome is not None and failed.outcome.reason is Reason.INVALID_SPEC
    again = decide_unusable(problem, failed.status, 2, sim.now + timedelta(seconds=10))
    assert (again.status, again.events, again.outcome) == (failed.status, (), None)
    # Fixing the spec (a new generation) starts again from step 0.
    sim.status, sim.generation = failed.status, 3
    assert event_reasons(sim.tick())[0] is Reason.SPEC_CHANGED


def test_routes_moved_together_that_differ_are_not_live_and_the_ones_that_did_not_take_are_named() -> None:
    sim = started()
    before = sim.status
    decision = sim.start()
    partly = LiveRoute(
        80, 20, differing="not every route moved together took it: HTTPRoute internal carries 0"
    )

    settled = settle_write(before, decision, partly, sim.now, 1)

    ready = condition(settled.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and ready.reason == Reason.WEIGHT_NOT_APPLIED
    assert "HTTPRoute internal carries 0" in ready.message
    assert next_wakeup(sim.spec, settled.status, sim.now) == WRITE_RETRY
    # Read back as differing, the weights are written again although the one shown is the wanted one.
    again = decide(sim.spec, settled.status, observe(partly), sim.now + WRITE_RETRY)
    assert again.weight == 20
    kept = condition(again.status.conditions, ConditionType.ROUTE_READY)
    assert kept is not None and kept.reason == Reason.WEIGHT_NOT_APPLIED
    healed = decide(sim.spec, again.status, observe(live(20)), sim.now + 2 * WRITE_RETRY)
    assert healed.weight is None
    ready = condition(healed.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and ready.reason == Reason.ROUTE_FOUND
