"""Every effect of a tick is an action in its Decision, in the order the reconciler applies it: what a
tick did can be read from the Decision alone (core/actions.py, core.actions.decide_deletion,
core.actions.after_write)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from modelgate import core
from modelgate.api import BreachTrace, ModelRolloutSpec, ModelRolloutStatus, Phase, PodValue
from modelgate.core import CommandAction, Decision, Reason, WriteFailed, decide
from modelgate.core.actions import after_evidence, after_write, decide_deletion
from modelgate.core.gate_judgement import CheckMeasured
from modelgate.core.model import (
    Action,
    ClearCommand,
    CollectEvidence,
    DeleteGateJobs,
    PostEvents,
    RecordEnding,
    RemoveFinalizer,
    ScaleDownIncumbent,
    SetFinalizer,
    StartGateChecks,
    WriteRoute,
    WriteStatus,
)
from modelgate.core.notifying import BreachEvidence
from tests.unit.engine_support import (
    INTERVAL,
    T0,
    Outcome,
    Simulator,
    Ticked,
    command,
    live,
    make_spec,
    observe,
    weight,
)
from tests.unit.test_engine_gate import GOOD, gated, gating, tick
from tests.unit.test_engine_watch import in_window, watch_spec


def kinds(decision: Decision | Ticked) -> list[type[Action]]:
    return [type(action) for action in decision.actions]


def returning_traffic(spec: ModelRolloutSpec) -> ModelRolloutSpec:
    return spec.model_copy(
        update={"rollback": spec.rollback.model_copy(update={"on_delete": "ReturnTraffic"})}
    )


def rolled_back() -> Simulator:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()
    sim.tick_with_analysis(Outcome.FAIL, after=INTERVAL)
    assert sim.phase is Phase.ROLLED_BACK
    return sim


def test_a_step_writes_its_status_before_its_weight() -> None:
    decision = Simulator(make_spec(weight(20), weight(100))).start()
    assert kinds(decision) == [WriteStatus, WriteRoute, PostEvents, WriteStatus]
    first, route = decision.actions[:2]
    assert isinstance(first, WriteStatus) and not first.may_wait and first.status.current_weight == 20
    assert route == WriteRoute(20, 0)


def test_a_rollback_writes_zero_first_then_collects_evidence_and_posts_events() -> None:
    decision = rolled_back().ticks[-1]
    assert kinds(decision) == [WriteRoute, CollectEvidence, PostEvents, WriteStatus, RecordEnding]
    route, evidence, events = decision.actions[:3]
    assert decision.actions[-1] == RecordEnding(core.Outcome(Phase.ROLLED_BACK, Reason.METRIC_BREACH))
    assert route == WriteRoute(0, 0)
    assert isinstance(evidence, CollectEvidence) and evidence.reason.metric is not None
    assert isinstance(events, PostEvents) and Reason.ROLLED_BACK in {e.reason for e in events.events}


def test_after_write_settles_the_status_and_events_the_later_actions_carry() -> None:
    decision = rolled_back().ticks[-1]
    traces = (BreachTrace(trace_id="4bf92f3577b34da6", pod="chat-v2-abc"),)
    pods = (PodValue(pod="chat-v2-abc", value=0.2),)
    settled = after_evidence(after_write(decision.decision, live(0), T0), BreachEvidence(traces, pods))
    assert settled.status.live_weight == 0
    assert settled.status.rollback_reason is not None and settled.status.rollback_reason.traces == traces
    (posted,) = [a for a in settled.actions if isinstance(a, PostEvents)]
    assert any("4bf92f3577b34da6" in e.message for e in posted.events)
    assert settled.actions[-2:] == (WriteStatus(settled.status, may_wait=True), decision.actions[-1])

    failed = after_write(decision.decision, WriteFailed("changed under every attempt"), T0)
    (posted,) = [a for a in failed.actions if isinstance(a, PostEvents)]
    assert Reason.WEIGHT_NOT_APPLIED in {e.reason for e in posted.events}


def test_the_gate_starts_its_checks_and_deletes_its_jobs_once_decided() -> None:
    spec = gated()
    started = decide(spec, ModelRolloutStatus(), replace(observe(), rollout="chat", uid="uid-1"), T0)
    assert StartGateChecks in kinds(started) and WriteRoute not in kinds(started)
    decided = tick(spec, gating(spec), CheckMeasured(GOOD))
    assert DeleteGateJobs in kinds(decided) and StartGateChecks not in kinds(decided)


def test_the_window_passed_scales_the_incumbent_down() -> None:
    sim = in_window(watch_spec(scaleDownIncumbent=True))
    decision = sim.tick_with_analysis(Outcome.PASS, after=timedelta(minutes=3))
    assert sim.phase is Phase.SUCCEEDED
    assert ScaleDownIncumbent("chat-v1") in decision.actions


def test_a_handled_command_is_cleared() -> None:
    sim = Simulator(make_spec(weight(20), weight(100)))
    sim.start()
    promote = command(CommandAction.PROMOTE, "p-1")
    assert ClearCommand("p-1") in sim.tick(command=promote).actions
    assert ClearCommand not in kinds(sim.tick())


def test_the_finalizer_is_set_first_and_removed_once_not_wanted() -> None:
    spec = returning_traffic(make_spec(weight(20), weight(100), with_analysis=False))
    first = decide(spec, ModelRolloutStatus(), observe(), T0)
    assert kinds(first)[0] is SetFinalizer
    kept = decide(spec, first.status, replace(observe(live(20)), has_finalizer=True), T0)
    assert SetFinalizer not in kinds(kept) and RemoveFinalizer not in kinds(kept)
    done = decide(
        spec,
        first.status,
        replace(observe(live(20)), has_finalizer=True, command=command(CommandAction.PROMOTE_FULL, "f-1")),
        T0,
    )
    assert done.status.phase is Phase.SUCCEEDED and kinds(done)[-1] is RemoveFinalizer


def test_a_deleted_rollout_returns_the_traffic_then_removes_the_finalizer() -> None:
    spec = returning_traffic(make_spec(weight(20), weight(100)))
    status = ModelRolloutStatus(phase=Phase.PROGRESSING, current_weight=20)
    decision = decide_deletion(spec, status, live(20), has_finalizer=True)
    assert kinds(decision) == [WriteRoute, PostEvents, RemoveFinalizer]
    assert decision.actions[0] == WriteRoute(0, 0)
    assert after_write(decision, live(0), T0).actions == decision.actions

    refused = after_write(decision, live(20), T0)
    assert kinds(refused) == [WriteRoute, PostEvents]
    (posted,) = [a for a in refused.actions if isinstance(a, PostEvents)]
    assert [e.reason for e in posted.events] == [Reason.WEIGHT_NOT_APPLIED]

    nothing_to_return = decide_deletion(spec, status, live(0), has_finalizer=True)
    assert nothing_to_return.actions == (RemoveFinalizer(),)
    assert decide_deletion(spec, status, live(20), has_finalizer=False).actions == ()
