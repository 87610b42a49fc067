"""status.pause says why a rollout is held, as data: each hold the engine makes names its reason, and
`modelgate resume` and `promote` act on the field, never on a condition (conditions are for readers)."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import PauseReason, Phase, parse_spec
from modelgate.core import CommandAction, LiveRoute
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    command,
    make_spec,
    simulator_in,
    timed_pause,
    weight,
)


def reason(sim: Simulator) -> PauseReason | None:
    return None if sim.status.pause is None else sim.status.pause.reason


def without_conditions(sim: Simulator) -> Simulator:
    """The status with its conditions gone: what the operator decides on must be elsewhere."""
    sim.status = sim.status.model_copy(update={"conditions": ()})
    return sim


def error_paused() -> Simulator:
    sim = simulator_in(Phase.PROGRESSING, make_spec(weight(20), weight(100), max_consecutive_errors=1))
    sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    return sim


def test_errors_pause_with_their_reason_since_the_pause_began() -> None:
    sim = error_paused()
    paused_at = sim.now
    assert (sim.phase, reason(sim)) == (Phase.PAUSED, PauseReason.PROMETHEUS_ERRORS)
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)  # answering again does not end it
    assert sim.status.pause is not None and sim.status.pause.since == paused_at


def test_resume_acts_on_the_pause_not_on_the_conditions() -> None:
    sim = without_conditions(error_paused())
    sim.tick(command=command(CommandAction.RESUME))
    assert (sim.phase, sim.status.pause) == (Phase.PROGRESSING, None)
    assert sim.status.last_command is not None and sim.status.last_command.result == "Applied"


def test_promote_is_refused_during_an_error_pause_whatever_the_conditions_say() -> None:
    sim = without_conditions(error_paused())
    sim.tick(command=command(CommandAction.PROMOTE))
    assert sim.status.last_command is not None and sim.status.last_command.result == "Ignored"
    assert reason(sim) is PauseReason.PROMETHEUS_ERRORS


def test_an_indefinite_step_pauses_until_promote() -> None:
    sim = simulator_in(Phase.PAUSED)  # 20% then an indefinite pause
    assert reason(sim) is PauseReason.INDEFINITE_STEP
    sim.tick(command=command(CommandAction.RESUME))  # resume does not end a step's own pause
    assert reason(sim) is PauseReason.INDEFINITE_STEP
    sim.tick(command=command(CommandAction.PROMOTE, "promote-2"))
    assert (sim.phase, sim.status.pause) == (Phase.PROGRESSING, None)


def test_a_pending_deadline_pauses_and_resume_restarts_its_clock() -> None:
    document = make_spec(weight(50)).model_dump(by_alias=True, exclude_none=True)
    document["progressDeadlines"] = {"pending": {"after": "1m", "action": "pause"}}
    sim = Simulator(parse_spec(document), available=False)
    sim.tick()
    sim.tick(after=timedelta(minutes=1))
    assert (sim.phase, reason(sim)) == (Phase.PENDING, PauseReason.PENDING_DEADLINE)
    without_conditions(sim).tick(command=command(CommandAction.RESUME))
    assert (sim.phase, sim.status.pause, sim.status.pending_since) == (Phase.PENDING, None, sim.now)


def test_a_second_overwrite_holds_the_route_and_resume_releases_it() -> None:
    sim = Simulator(make_spec(weight(20), timed_pause("1m"), weight(100), with_analysis=False))
    sim.start()
    sim.tick()
    for taken in (37, 41):
        sim.route = LiveRoute(100 - taken, taken, "argocd-controller")
        sim.tick()
    assert (sim.phase, reason(sim)) == (Phase.PAUSED, PauseReason.ROUTE_CONFLICT)
    without_conditions(sim).tick(command=command(CommandAction.RESUME))
    assert sim.status.pause is None and sim.ticks[-1].written == 20


def test_a_rollback_held_in_the_watch_window_says_so_and_ends_with_the_rollback() -> None:
    document = make_spec(weight(50)).model_dump(by_alias=True, exclude_none=True)
    document["watch"] = {"duration": "2m"}
    sim = Simulator(parse_spec(document))
    sim.start()
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    sim.incumbent_available = False
    sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert (sim.phase, reason(sim)) == (Phase.PAUSED, PauseReason.ROLLBACK_HELD)
    sim.incumbent_available = True
    sim.tick(after=timedelta(seconds=10))
    assert (sim.phase, sim.status.pause) == (Phase.ROLLED_BACK, None)


def test_an_ended_rollout_keeps_no_pause_of_its_steps() -> None:
    sim = simulator_in(Phase.PAUSED)
    sim.tick(command=command(CommandAction.ABORT))
    assert (sim.phase, sim.status.pause) == (Phase.ROLLED_BACK, None)
    sim.tick(command=command(CommandAction.RESUME))  # nothing left to resume
    assert sim.status.last_command is not None and sim.status.last_command.result == "Ignored"


def test_a_pause_an_older_operator_kept_in_a_condition_survives_the_upgrade() -> None:
    sim = error_paused()
    sim.status = sim.status.model_copy(update={"pause": None})  # as an operator before status.pause wrote it
    sim.conditions_unread = False  # the upgrade reads them, once
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert (sim.phase, reason(sim)) == (Phase.PAUSED, PauseReason.PROMETHEUS_ERRORS)
