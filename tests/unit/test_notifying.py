"""Which transitions notify, their keys across re-decides and restarts, and what the payload says
(core/notifying.py)."""

from __future__ import annotations

import copy
import re
from datetime import timedelta
from typing import Any

import pytest

from modelgate.api import InvalidSpecError, ModelRolloutSpec, Phase, parse_spec
from modelgate.api.gate_status import GateDecision
from modelgate.api.notifications import Transition
from modelgate.api.rollback_reason import BreachTrace
from modelgate.core import CommandAction
from modelgate.core.gate_judgement import CheckMeasured
from modelgate.core.model import Notify, WriteStatus
from modelgate.core.notifying import BreachEvidence, payload
from modelgate.core.stepping import FINISHED_RESYNC, RESYNC, next_wakeup
from tests.unit.engine_support import (
    ERROR_RATE,
    INTERVAL,
    Outcome,
    Simulator,
    Ticked,
    command,
    indefinite_pause,
    make_spec,
    weight,
)
from tests.unit.test_engine_gate import REGRESSED, gated, gating, tick

RECEIVERS = [{"name": "ops", "kind": "webhook", "urlSecretRef": {"name": "hooks", "key": "ops"}}]


def notifying(spec: ModelRolloutSpec, **notifications: Any) -> ModelRolloutSpec:
    document = spec.model_dump(by_alias=True, exclude_none=True)
    wanted = {"receivers": RECEIVERS, **notifications}
    return ModelRolloutSpec.model_validate({**document, "notifications": wanted})


def notified(tick: Ticked) -> list[Notify]:
    """The notifications the tick queued for delivery."""
    return list(tick.world.notifications[len(tick.before.notifications) :])


def transitions(decision: Ticked) -> list[Transition]:
    return [action.pending.transition for action in notified(decision)]


def canary() -> Simulator:
    return Simulator(notifying(make_spec(weight(20), indefinite_pause(), weight(100))))


def test_the_default_transitions_notify_and_routine_steps_do_not() -> None:
    sim = canary()
    assert transitions(sim.start()) == []  # step 0 started: not among the defaults
    assert transitions(sim.tick(analysis=Outcome.PASS, after=INTERVAL)) == [Transition.PAUSED]
    assert transitions(sim.tick(command=command(CommandAction.PROMOTE_FULL, "p"))) == [
        Transition.PAUSED,  # still pending: nothing delivered yet
        Transition.SUCCEEDED,
    ]


def test_a_rollback_notifies_once_with_a_key_that_stays_until_delivered() -> None:
    sim = canary()
    sim.start()
    twin = copy.deepcopy(sim)
    rolled_back = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    (notify,) = notified(rolled_back)
    assert notify.pending.transition is Transition.ROLLED_BACK and notify.key == "uid-1/RolledBack/1"
    # Deciding the same tick again (a restart before the status was written) gives the same key.
    again = twin.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert [n.key for n in notified(again)] == [notify.key]
    # Asked again each tick until the delivery says it ended; then gone from status and actions.
    assert [n.key for n in notified(sim.tick(after=INTERVAL))] == [notify.key]
    sim.notified = frozenset({notify.key})
    done = sim.tick(after=INTERVAL)
    assert notified(done) == [] and done.status.notifications is not None
    assert done.status.notifications.pending == () and done.status.notifications.sequence == 1


def test_keys_survive_a_restart_between_ticks() -> None:
    sim = canary()
    sim.restart_every_tick = True
    sim.start()
    first = notified(sim.tick(analysis=Outcome.PASS, after=INTERVAL))
    later = notified(sim.tick(after=INTERVAL))
    assert [n.key for n in first] == [n.key for n in later] == ["uid-1/Paused/1"]


def test_on_chooses_the_transitions() -> None:
    sim = Simulator(notifying(make_spec(weight(20), weight(100)), on=["StepStarted"]))
    started = sim.start()
    assert transitions(started) == [Transition.STEP_STARTED]
    sim.notified = frozenset(n.key for n in notified(started))
    assert transitions(sim.tick(analysis=Outcome.FAIL, after=INTERVAL)) == []  # RolledBack not chosen


def test_without_receivers_nothing_is_noted() -> None:
    for spec in (make_spec(weight(20)), notifying(make_spec(weight(20)), receivers=[])):
        sim = Simulator(spec)
        sim.start()
        decision = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
        assert notified(decision) == [] and decision.status.notifications is None


def test_a_rollback_payload_names_the_breach_its_traces_and_the_weights() -> None:
    sim = canary()
    sim.start()
    trace = BreachTrace(trace_id="4bf92f3577b34da6", pod="chat-v2-0", value=0.9)
    sim.evidence = BreachEvidence(traces=(trace,), pods=())
    settled = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    (notify,) = notified(settled)
    body = payload(notify)
    reason = body.rollback_reason
    assert body.phase is Phase.ROLLED_BACK and body.weights.candidate == 0 and body.weights.incumbent == 100
    assert reason is not None and reason.metric == ERROR_RATE.name
    assert reason.value is not None and reason.threshold == ERROR_RATE.max and reason.value > reason.threshold
    assert [t.trace_id for t in reason.traces] == [trace.trace_id]
    assert body.metadata["eventType"] == "Warning" and body.key == notify.key
    # The status that carries the pending notification is written before it is delivered.
    kinds = [type(action) for action in settled.actions]
    assert kinds.index(WriteStatus) < kinds.index(Notify)


def test_a_gate_rejection_notifies_the_decision() -> None:
    spec = notifying(gated())
    decision = tick(spec, gating(spec), CheckMeasured(REGRESSED))
    assert set(transitions(decision)) == {Transition.GATE_DECIDED}  # Failed is not a default
    body = payload(notified(decision)[0])
    assert body.gate is not None and body.gate.decision is GateDecision.REJECT
    assert body.metadata["eventType"] == "Warning" and body.name == "chat"


@pytest.mark.parametrize(
    ("notifications", "field"),
    [
        ({"receivers": RECEIVERS * 2}, "notifications.receivers[1].name"),
        ({"receivers": RECEIVERS, "on": ["Paused", "Paused"]}, "notifications.on[1]"),
        ({"receivers": [{**RECEIVERS[0], "kind": "discord"}]}, "notifications.receivers[0].kind"),
    ],
)
def test_bad_notifications_name_the_field(notifications: dict[str, Any], field: str) -> None:
    document = make_spec(weight(20)).model_dump(by_alias=True, exclude_none=True)
    with pytest.raises(InvalidSpecError, match=re.escape(field)):
        parse_spec({**document, "notifications": notifications})


def test_an_ended_rollout_with_undelivered_notifications_is_looked_at_again_soon() -> None:
    sim = canary()
    sim.start()
    rolled_back = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert next_wakeup(sim.spec, rolled_back.status, sim.now) <= RESYNC
    sim.notified = frozenset(n.key for n in notified(rolled_back))
    delivered = sim.tick(after=INTERVAL)
    assert next_wakeup(sim.spec, delivered.status, sim.now) == FINISHED_RESYNC


@pytest.mark.parametrize(
    ("action", "told"),
    [
        ("pause", [Transition.DEADLINE, Transition.PAUSED]),
        ("rollback", [Transition.DEADLINE, Transition.ROLLED_BACK]),
    ],
)
def test_a_progress_deadline_is_told_with_what_it_did(action: str, told: list[Transition]) -> None:
    document = make_spec(weight(20)).model_dump(by_alias=True, exclude_none=True)
    document["progressDeadlines"] = {"pending": {"after": "1m", "action": action}}
    sim = Simulator(notifying(ModelRolloutSpec.model_validate(document)))
    sim.available = False
    assert transitions(sim.tick()) == []
    assert transitions(sim.tick(after=timedelta(minutes=2))) == told
