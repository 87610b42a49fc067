"""The Gating phase in the engine: checks start once the candidate is Available while it gets no
traffic; a rejection ends Failed without a weight ever written; a canary starts the steps; a full
release skips them or starts where spec.gate.full says; promote and abort decide the gate; a tick
after a restart finds the same Jobs."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase
from modelgate.api.gate_result import GateResult
from modelgate.api.gate_status import CheckState, GateDecision
from modelgate.core import CommandAction, Reason, decide
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured, CheckObservation, CheckRunning
from tests.unit.engine_support import T0, Ticked, as_applied, command, make_spec, observe, weight

GOOD = GateResult.model_validate(
    {"scores": [{"name": "math", "candidate": 0.9, "incumbent": 0.8, "samples": 50}]}
)
REGRESSED = GateResult.model_validate(
    {"scores": [{"name": "math", "candidate": 0.6, "incumbent": 0.8, "samples": 50}]}
)


def gated(**gate: Any) -> ModelRolloutSpec:
    spec = make_spec(weight(10), weight(50), with_analysis=False)
    checks = [{"name": "quality", "job": {"image": "check:1"}, "policy": {"minSamples": 20, "maxDrop": 0.05}}]
    document = spec.model_dump(by_alias=True, exclude_none=True)
    return ModelRolloutSpec.model_validate({**document, "gate": {"checks": checks, **gate}})


def tick(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, seen: CheckObservation | None = None, **kwargs: Any
) -> Ticked:
    """One tick, its actions applied."""
    observed = replace(observe(**kwargs), rollout="chat", uid="uid-1")
    if seen is not None:
        observed = replace(observed, gate_checks={"quality": seen})
    now = T0 + timedelta(seconds=5)
    return as_applied(decide(spec, status, observed, now), observed.route, now=now)


def gating(spec: ModelRolloutSpec) -> ModelRolloutStatus:
    first = decide(spec, ModelRolloutStatus(), replace(observe(), rollout="chat", uid="uid-1"), T0)
    assert first.status.phase is Phase.GATING
    return first.status


def test_an_available_candidate_starts_the_checks_at_weight_zero() -> None:
    status = gating(gated())
    assert status.current_weight == 0 and status.gate is not None
    (check,) = status.gate.checks
    assert check.state is CheckState.RUNNING and check.job.startswith("chat-quality-")


def test_a_rejection_fails_the_rollout_and_writes_no_weight() -> None:
    decision = tick(gated(), gating(gated()), CheckMeasured(REGRESSED))
    assert decision.status.phase is Phase.FAILED and decision.written is None
    assert decision.outcome is not None and decision.outcome.reason is Reason.GATE_REJECTED
    assert decision.status.gate is not None and decision.status.gate.decision is GateDecision.REJECT
    assert Reason.GATE_REJECTED in {e.reason for e in decision.events}


def test_a_passing_gate_is_a_canary_unless_a_full_release_is_allowed() -> None:
    canary = tick(gated(), gating(gated()), CheckMeasured(GOOD))
    assert (canary.status.phase, canary.written, canary.status.current_step_index) == (
        Phase.PROGRESSING,
        10,
        0,
    )
    full = gated(full={"allowed": True})
    skipped = tick(full, gating(full), CheckMeasured(GOOD))
    assert (skipped.status.phase, skipped.written) == (Phase.SUCCEEDED, 100)
    later = gated(full={"allowed": True, "startAtStep": 1})
    started = tick(later, gating(later), CheckMeasured(GOOD))
    assert (started.status.current_step_index, started.written) == (1, 50)


def test_while_a_check_runs_nothing_moves_and_a_restart_finds_the_same_jobs() -> None:
    spec = gated()
    status = gating(spec)
    waiting = tick(spec, status, CheckRunning("Job chat-quality running"))
    assert waiting.status.phase is Phase.GATING and waiting.written is None
    assert waiting.status.gate is not None and status.gate is not None
    assert [c.job for c in waiting.status.gate.checks] == [c.job for c in status.gate.checks]
    assert waiting.status.gate.checks[0].verdict is None


def test_a_check_error_follows_on_error() -> None:
    decision = tick(gated(), gating(gated()), CheckFailed("its Job ran past its deadline"))
    assert decision.status.phase is Phase.FAILED


def test_promote_passes_the_gate_and_abort_rejects_it() -> None:
    spec = gated()
    promoted = tick(spec, gating(spec), command=command(CommandAction.PROMOTE))
    assert promoted.status.phase is Phase.PROGRESSING and promoted.written == 10
    assert promoted.status.gate is not None and promoted.status.gate.decision is GateDecision.CANARY
    aborted = tick(spec, gating(spec), command=command(CommandAction.ABORT))
    assert aborted.status.phase is Phase.FAILED and aborted.written is None
    ignored = tick(spec, gating(spec), command=command(CommandAction.PROMOTE_FULL))
    assert ignored.status.phase is Phase.GATING  # spec.gate.full.allowed is false


def test_a_gate_removed_while_its_checks_run_starts_the_steps() -> None:
    status = gating(gated())
    ungated = make_spec(weight(10), weight(50), with_analysis=False)
    decision = tick(ungated, status)
    assert (decision.status.phase, decision.written) == (Phase.PROGRESSING, 10)


def test_a_rejection_with_many_failing_scores_keeps_the_status_within_its_schema() -> None:
    scores = [
        {"name": f"capability-{i:02d}-" + "x" * 40, "candidate": 0.1, "incumbent": 0.9, "samples": 50}
        for i in range(32)
    ]
    decision = tick(gated(), gating(gated()), CheckMeasured(GateResult.model_validate({"scores": scores})))
    assert decision.status.phase is Phase.FAILED
    ModelRolloutStatus.model_validate(decision.status.model_dump(by_alias=True))


def test_a_full_release_past_the_steps_starts_the_canary_instead_of_skipping_it() -> None:
    """The attack: startAtStep 40 with 2 steps, then `promote --full`, once went straight to 100%.
    The CRD refuses it; a spec that never passed through it starts the steps at 0."""
    spec = gated(full={"allowed": True, "startAtStep": 1})
    assert spec.gate is not None
    past = spec.gate.full.model_copy(update={"start_at_step": 40})
    spec = spec.model_copy(update={"gate": spec.gate.model_copy(update={"full": past})})
    for decided in (
        tick(spec, gating(spec), command=command(CommandAction.PROMOTE_FULL)),
        tick(spec, gating(spec), CheckMeasured(GOOD)),
    ):
        assert (decided.status.phase, decided.status.current_step_index, decided.written) == (
            Phase.PROGRESSING,
            0,
            10,
        )
