"""What a weight write returned, folded into the actions after it (core.after_write, applied in memory
by core/actions.py), and the outcome, the
command result and the unusable-spec path the reconciler no longer decides by itself."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import CommandResult, Phase
from modelgate.core import (
    CommandAction,
    ConditionType,
    LiveRoute,
    Reason,
    Router,
    SpecProblem,
    WriteFailed,
    decide,
    decide_unusable,
    next_wakeup,
)
from modelgate.core.reasons import condition
from modelgate.core.stepping import RESYNC, WRITE_RETRY
from tests.unit.engine_support import (
    INTERVAL,
    NOT_LIVE,
    Outcome,
    Simulator,
    as_applied,
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
    sim = Simulator(make_spec(weight(20), weight(100)))
    decision = sim.start()

    assert (decision.written, sim.route) == (20, live(20))
    assert decision.status.live_weight == 20
    assert Reason.WEIGHT_NOT_APPLIED not in event_reasons(decision)
    assert next_wakeup(sim.spec, decision.status, sim.now) <= RESYNC
    # the decision's one wake-up is the schedule's over the settled status
    assert decision.wake_at == sim.now + next_wakeup(sim.spec, decision.status, sim.now)


def test_a_write_that_did_not_take_is_a_warning_once_and_a_quick_retry() -> None:
    sim = started()
    sim.route = live(7)  # a webhook rewrote it

    first = sim.start()

    ready = condition(first.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and (ready.status, ready.reason) == ("False", Reason.WEIGHT_NOT_APPLIED)
    assert "carries candidate weight 7 after writing 20" in ready.message
    assert first.status.live_weight == 7
    assert event_reasons(first)[-1] is Reason.WEIGHT_NOT_APPLIED
    assert next_wakeup(sim.spec, first.status, sim.now) == WRITE_RETRY
    took = Simulator(sim.spec).start()
    assert took.wake_at is not None and took.wake_at > sim.now + WRITE_RETRY
    assert first.wake_at == sim.now + WRITE_RETRY, "settling brings the wake-up forward"

    # The next tick still sees 7: it writes again, and the problem is not reported a second time.
    refused = Router(refusal=WriteFailed("changed under every attempt"))
    again = as_applied(
        decide(sim.spec, first.status, observe(live(7)), sim.now + WRITE_RETRY), live(7), router=refused
    )
    assert again.written == 20
    kept = condition(again.status.conditions, ConditionType.ROUTE_READY)
    assert kept is not None and kept.reason == Reason.WEIGHT_NOT_APPLIED
    assert Reason.WEIGHT_NOT_APPLIED not in event_reasons(again)

    # Once the route carries the weight, RouteReady is True again and the wake-ups are normal.
    healed = as_applied(
        decide(sim.spec, again.status, observe(live(20)), sim.now + 2 * WRITE_RETRY), live(20)
    )
    ready = condition(healed.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and (ready.status, ready.reason) == ("True", Reason.ROUTE_FOUND)
    assert healed.status.live_weight == 20 and healed.written is None


def test_a_write_that_did_not_take_is_a_warning_even_in_a_tick_with_no_other_event() -> None:
    """A Failed rollout asks for 0 until the route carries it, with no Event of its own: the Warning
    of a write that did not take is posted all the same (an action of its own)."""
    sim = simulator_in(Phase.FAILED)
    sim.route, sim.router_applies = live(20), False
    refused = sim.tick()
    assert refused.written == 0 and event_reasons(refused) == [Reason.WEIGHT_NOT_APPLIED]
    assert event_reasons(sim.tick()) == []  # said once


def test_no_step_completes_while_a_write_has_not_taken() -> None:
    sim = Simulator(make_spec(weight(20), weight(100), with_analysis=False))
    sim.router_applies = False
    sim.start()
    decision = sim.tick(after=INTERVAL)
    assert (decision.status.current_step_index, decision.written) == (0, 20)


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


def test_an_unusable_spec_fails_the_rollout_once_and_returns_its_traffic() -> None:
    sim = simulator_in(Phase.PROGRESSING)
    problem = SpecProblem("spec.analysis.metrics[0].query: unknown variable 'podz'")

    failed = as_applied(decide_unusable(problem, sim.status, 2, sim.now), sim.route)

    assert (failed.status.phase, failed.status.message) == (Phase.FAILED, problem.message)
    assert (failed.written, failed.world.route) == (0, live(0))
    assert event_reasons(failed) == [Reason.INVALID_SPEC]
    assert failed.outcome is not None and failed.outcome.reason is Reason.INVALID_SPEC
    later = sim.now + timedelta(seconds=10)
    again = as_applied(decide_unusable(problem, failed.status, 2, later), failed.world.route)
    assert (again.status, again.written, again.events, again.outcome) == (failed.status, None, (), None)
    # Fixing the spec (a new generation) starts again from step 0.
    sim.status, sim.generation = failed.status, 3
    assert event_reasons(sim.tick())[0] is Reason.SPEC_CHANGED


def test_routes_moved_together_that_differ_are_not_live_and_the_ones_that_did_not_take_are_named() -> None:
    sim = started()
    partly = LiveRoute(
        80, 20, differing="not every route moved together took it: HTTPRoute internal carries 0"
    )

    sim.route = partly

    settled = sim.start()

    ready = condition(settled.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and ready.reason == Reason.WEIGHT_NOT_APPLIED
    assert "HTTPRoute internal carries 0" in ready.message
    assert next_wakeup(sim.spec, settled.status, sim.now) == WRITE_RETRY
    # Read back as differing, the weights are written again although the one shown is the wanted one.
    later = sim.now + WRITE_RETRY
    again = as_applied(decide(sim.spec, settled.status, observe(partly), later), partly, router=NOT_LIVE)
    assert again.written == 20
    kept = condition(again.status.conditions, ConditionType.ROUTE_READY)
    assert kept is not None and kept.reason == Reason.WEIGHT_NOT_APPLIED
    healed = as_applied(decide(sim.spec, again.status, observe(live(20)), later + WRITE_RETRY), live(20))
    assert healed.written is None
    ready = condition(healed.status.conditions, ConditionType.ROUTE_READY)
    assert ready is not None and ready.reason == Reason.ROUTE_FOUND
