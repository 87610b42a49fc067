"""Manual commands: abort rolls back now, retry starts again from step 0, each command id is handled
once, and a command that does not apply is reported and changes nothing else."""

from __future__ import annotations

from datetime import timedelta

import pytest

from modelgate.api import CommandResult, ModelRolloutSpec, Phase
from modelgate.commands import decode_command
from modelgate.core import (
    COMMAND_ANNOTATION,
    CommandAction,
    CommandProblem,
    Event,
    EventType,
    Reason,
    UnreadableCommand,
    decide,
)
from modelgate.core.model import ClearCommand
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    Ticked,
    as_applied,
    command,
    effects,
    event_reasons,
    indefinite_pause,
    live,
    make_spec,
    observe,
    simulator_in,
    weight,
    weights_set,
)


def spec() -> ModelRolloutSpec:
    return make_spec(weight(20), indefinite_pause(), weight(60), weight(100))


def in_phase(phase: Phase) -> Simulator:
    return simulator_in(phase, spec())


@pytest.mark.parametrize("phase", [Phase.PENDING, Phase.PROGRESSING, Phase.PAUSED])
def test_abort_rolls_back_from_an_active_phase(phase: Phase) -> None:
    sim = in_phase(phase)
    had_traffic = sim.live_weight != 0

    decision = sim.tick(command=command(CommandAction.ABORT))

    assert (decision.status.phase, decision.status.current_weight) == (Phase.ROLLED_BACK, 0)
    assert weights_set(decision) == ([0] if had_traffic else [])
    assert sim.live_weight == 0
    reason = decision.status.rollback_reason
    assert reason is not None and "aborted" in reason.message
    assert reason.time == sim.now


def test_abort_from_failed_takes_the_candidate_out_once_the_route_works_again() -> None:
    # An abort (as Argo Rollouts allows until completion) ends a Failed rollout as RolledBack.
    sim = in_phase(Phase.FAILED)
    aborted = sim.tick(command=command(CommandAction.ABORT))
    assert aborted.status.phase is Phase.ROLLED_BACK
    assert weights_set(aborted) == []  # the route is still missing: nothing can be written
    sim.route = live(30)
    assert weights_set(sim.tick()) == [0]


@pytest.mark.parametrize("phase", [Phase.ROLLED_BACK, Phase.FAILED])
def test_retry_starts_again_from_step_zero(phase: Phase) -> None:
    sim = in_phase(phase)
    sim.route = live(0)

    decision = sim.tick(command=command(CommandAction.RETRY), after=timedelta(minutes=5))

    status = decision.status
    assert (status.current_step_index, status.rollback_reason, status.analysis) == (0, None, ())
    assert status.phase is Phase.PROGRESSING  # Pending, and the candidate is Available: step 0
    assert weights_set(decision) == [20]
    assert "Retry" in event_reasons(decision)


def test_retry_waits_in_pending_for_an_unavailable_candidate() -> None:
    sim = in_phase(Phase.ROLLED_BACK)
    sim.available = False

    decision = sim.tick(command=command(CommandAction.RETRY))

    assert (decision.status.phase, decision.status.current_weight) == (Phase.PENDING, 0)


def test_a_command_is_handled_once_per_id() -> None:
    sim = in_phase(Phase.ROLLED_BACK)
    retry = command(CommandAction.RETRY, "retry-7")
    assert sim.tick(command=retry).status.phase is Phase.PROGRESSING
    failed = sim.tick(command=retry, analysis=Outcome.FAIL, after=INTERVAL)
    assert failed.status.phase is Phase.ROLLED_BACK

    # The command is still there on later ticks (and after restarts): it does not start a third rollout.
    decision = sim.tick(command=retry, after=timedelta(minutes=1))

    assert decision.status.phase is Phase.ROLLED_BACK
    assert event_reasons(decision) == []
    assert decision.status.last_command is not None
    assert (decision.status.last_command.id, decision.status.last_command.result) == (
        "retry-7",
        CommandResult.APPLIED,
    )


def test_a_second_promote_with_the_same_id_does_not_skip_another_step() -> None:
    sim = Simulator(make_spec(indefinite_pause(), indefinite_pause(), weight(100)))
    sim.start()
    promote = command(CommandAction.PROMOTE, "p-1")

    sim.tick(command=promote)
    assert sim.status.current_step_index == 1
    sim.tick(command=promote, after=timedelta(seconds=1))
    assert sim.status.current_step_index == 1

    sim.tick(command=command(CommandAction.PROMOTE, "p-2"))
    assert sim.status.current_step_index == 2


NOT_APPLICABLE = [
    (Phase.PENDING, CommandAction.PROMOTE),
    (Phase.PENDING, CommandAction.PROMOTE_FULL),
    (Phase.PENDING, CommandAction.RESUME),
    (Phase.PENDING, CommandAction.RETRY),
    (Phase.PROGRESSING, CommandAction.RESUME),
    (Phase.PROGRESSING, CommandAction.RETRY),
    (Phase.PAUSED, CommandAction.RESUME),
    (Phase.PAUSED, CommandAction.RETRY),
    (Phase.SUCCEEDED, CommandAction.PROMOTE),
    (Phase.SUCCEEDED, CommandAction.PROMOTE_FULL),
    (Phase.SUCCEEDED, CommandAction.ABORT),
    (Phase.SUCCEEDED, CommandAction.RESUME),
    (Phase.SUCCEEDED, CommandAction.RETRY),
    (Phase.ROLLED_BACK, CommandAction.PROMOTE),
    (Phase.ROLLED_BACK, CommandAction.PROMOTE_FULL),
    (Phase.ROLLED_BACK, CommandAction.ABORT),
    (Phase.ROLLED_BACK, CommandAction.RESUME),
    (Phase.FAILED, CommandAction.PROMOTE),
    (Phase.FAILED, CommandAction.PROMOTE_FULL),
    (Phase.FAILED, CommandAction.RESUME),
]


@pytest.mark.parametrize(("phase", "action"), NOT_APPLICABLE, ids=lambda x: str(x))
def test_a_command_that_does_not_apply_is_reported_and_changes_nothing_else(
    phase: Phase, action: CommandAction
) -> None:
    sim = in_phase(phase)
    observed = observe(sim.route, available=sim.available)
    now = sim.now + timedelta(seconds=1)

    without = as_applied(decide(sim.spec, sim.status, observed, now), sim.route)
    observed = observe(sim.route, available=sim.available, command=command(action, "x"))
    with_command = as_applied(decide(sim.spec, sim.status, observed, now), sim.route)

    ignored = [e for e in with_command.events if e.reason is Reason.COMMAND_IGNORED]
    assert len(ignored) == 1 and ignored[0].type == "Warning"
    assert str(action) in ignored[0].message
    handled = with_command.status.last_command
    assert handled is not None
    assert (handled.id, handled.name, handled.result) == ("x", action.value, CommandResult.IGNORED)
    assert str(action) in handled.message
    assert with_command.status == without.status.model_copy(update={"last_command": handled})
    assert _without_ignored(with_command) == effects(without)


def _without_ignored(decision: Ticked) -> tuple[int | None, tuple[Event, ...]]:
    return decision.written, tuple(e for e in decision.events if e.reason is not Reason.COMMAND_IGNORED)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("promote", CommandProblem.NOT_JSON),
        ('["promote"]', CommandProblem.NOT_AN_OBJECT),
        ('{"action": "deploy", "id": "1"}', CommandProblem.UNKNOWN_ACTION),
        ('{"action": "promote"}', CommandProblem.BAD_ID),
        ('{"action": "promote", "id": 7}', CommandProblem.BAD_ID),
        ('{"action": "promote", "id": "' + "x" * 254 + '"}', CommandProblem.BAD_ID),
    ],
)
def test_an_annotation_that_is_not_a_command_is_ignored_with_a_warning(value: str, problem: str) -> None:
    """The attack: a malformed annotation once set Failed with the weight left where it was."""
    unreadable = decode_command({COMMAND_ANNOTATION: value})
    assert isinstance(unreadable, UnreadableCommand) and unreadable.problem is problem
    sim = in_phase(Phase.PROGRESSING)
    before = sim.status

    ignored = sim.tick(command=unreadable)

    assert (ignored.status.phase, ignored.status.current_step_index) == (
        before.phase,
        before.current_step_index,
    )
    assert ignored.written is None and ClearCommand(unreadable.id) in ignored.actions  # handled: removed
    last = ignored.status.last_command
    assert last is not None and (last.id, last.result) == (unreadable.id, CommandResult.IGNORED)
    (warning,) = [e for e in ignored.events if e.reason is Reason.COMMAND_IGNORED]
    assert warning.type is EventType.WARNING
    assert COMMAND_ANNOTATION in warning.message and str(problem) in warning.message
    assert event_reasons(sim.tick(command=unreadable)) == []  # said once


def test_after_an_unreadable_command_a_breach_still_rolls_back_and_a_command_still_applies() -> None:
    sim = in_phase(Phase.PAUSED)  # at the indefinite pause, weight 20
    sim.tick(command=decode_command({COMMAND_ANNOTATION: "{broken"}))
    promoted = sim.tick(command=command(CommandAction.PROMOTE))
    assert promoted.status.last_command is not None
    assert promoted.status.last_command.result is CommandResult.APPLIED
    assert promoted.status.current_step_index == 2 and weights_set(promoted) == [60]
    sim.tick(command=decode_command({COMMAND_ANNOTATION: "{broken again"}))
    breached = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert (breached.status.phase, weights_set(breached)) == (Phase.ROLLED_BACK, [0])


POINTED_AT = [
    # An indefinite pause is ended by promote, not resume; a rolled-back rollout by retry, not promote.
    (Phase.PAUSED, CommandAction.RESUME, CommandAction.PROMOTE),
    (Phase.ROLLED_BACK, CommandAction.PROMOTE, CommandAction.RETRY),
    (Phase.FAILED, CommandAction.RESUME, CommandAction.RETRY),
    (Phase.PROGRESSING, CommandAction.RETRY, CommandAction.ABORT),
    (Phase.SUCCEEDED, CommandAction.PROMOTE, None),
]


@pytest.mark.parametrize(("phase", "refused", "applies"), POINTED_AT, ids=lambda x: str(x))
def test_a_command_that_does_not_apply_points_at_the_one_that_does(
    phase: Phase, refused: CommandAction, applies: CommandAction | None
) -> None:
    sim = in_phase(phase)
    sim.tick(command=command(refused, "x"), after=timedelta(seconds=1))
    handled = sim.status.last_command
    assert handled is not None and handled.result is CommandResult.IGNORED
    if applies is None:
        assert "`modelgate" not in handled.message.split("does not apply")[1]
        return
    # The command that applies is the one that then does apply in the same state.
    assert f"`modelgate {applies}`" in handled.message
    sim.tick(command=command(applies, "y"), after=timedelta(seconds=1))
    then = sim.status.last_command
    assert then is not None and (then.id, then.result) == ("y", CommandResult.APPLIED)
