"""The gate phase of a tick: after the candidate is Available and before step 0, the checks of
spec.gate run while the candidate gets no traffic; their verdicts decide a full release, a canary or
a rejection (phase Failed, reason GateRejected, no weight ever written)."""

from __future__ import annotations

from modelgate.api import Phase, Verdict
from modelgate.api.gate_status import CheckState, CheckStatus, GateDecision, GateStatus
from modelgate.core import limits
from modelgate.core.gate_judgement import MESSAGE, GateOutcome, decide_gate, job_name, observe_check, run_id
from modelgate.core.intents import (
    AskWeight,
    Effect,
    EnterStep,
    Fail,
    Intent,
    Say,
    SetCondition,
    Succeed,
    fields,
)
from modelgate.core.model import CommandAction
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.tick import TickView

_CHECK_REASONS = {
    Verdict.PASS: Reason.GATE_CHECK_PASSED,
    Verdict.FAIL: Reason.GATE_CHECK_FAILED,
    Verdict.INCONCLUSIVE: Reason.GATE_CHECK_INCONCLUSIVE,
}


def _starting(tick: TickView, run: str, check: str) -> CheckStatus:
    """A check whose Job the reconciler is about to create."""
    job = job_name(tick.observed.rollout, tick.observed.uid, run, check)
    return CheckStatus(name=check, job=job, state=CheckState.RUNNING, message="starting its Job")


def gate_start(tick: TickView) -> tuple[Effect, ...]:
    """What starts the checks: their Jobs are named in status, and the reconciler creates them."""
    gate = tick.spec.gate
    assert gate is not None
    run = run_id(tick.observed.generation, tick.now)
    checks = tuple(_starting(tick, run, check.name) for check in gate.checks)
    names = ", ".join(check.name for check in gate.checks)
    started = fields(
        phase=Phase.GATING,
        pending_since=None,
        gate=GateStatus(started_at=tick.now, run=run, checks=checks),
        message=f"gate: running checks {names}; the candidate gets no traffic",
    )
    running = f"candidate {tick.spec.candidate.name} is Available; running checks {names}"
    return started, Say(Reason.GATE_STARTED, running)


def gating(tick: TickView) -> tuple[Intent, tuple[Effect, ...]]:
    """Reads what the checks' Jobs showed, judges those that ended, and decides once all have; with
    what that records."""
    spec, gate = tick.spec.gate, tick.status.gate
    if spec is None or gate is None:
        # spec.gate was removed while its checks ran: nothing is left to judge the candidate by.
        removed = (
            fields(phase=Phase.PROGRESSING),
            Say(Reason.ROLLOUT_STARTED, "spec.gate was removed; the steps start"),
        )
        return EnterStep(0), (AskWeight(0), *removed)
    checks = []
    noted: list[Effect] = [AskWeight(0)]
    for check in spec.checks:
        current = gate.check(check.name) or _starting(tick, gate.run, check.name)
        seen = observe_check(check, current, tick.observed.gate_checks.get(check.name), tick.now)
        if seen.verdict is not None and current.verdict is None:
            noted.append(Say(_CHECK_REASONS[seen.verdict], f"gate check {check.name}: {seen.message}"))
        checks.append(seen)
    checked = gate.model_copy(update={"checks": tuple(checks)})
    noted.append(fields(gate=checked))
    outcome = decide_gate(spec, tuple(checks))
    if outcome is None:
        waiting = "; ".join(f"{c.name}: {c.message}" for c in checks if c.verdict is None)
        noted.append(fields(message=f"gate: waiting for checks ({waiting}); the candidate gets no traffic"))
        return None, tuple(noted)
    intent, decided = act_on(tick, outcome, checked)
    return intent, (*noted, *decided)


def act_on(tick: TickView, outcome: GateOutcome, gate: GateStatus) -> tuple[Intent, tuple[Effect, ...]]:
    """Acts on the gate's decision: a rejection ends the rollout Failed at weight 0; a canary starts
    the steps; a full release skips them, or starts at spec.gate.full.startAtStep."""
    assert tick.spec.gate is not None
    message = limits.clip(outcome.message, MESSAGE)  # model_copy does not check the schema's length
    decided = gate.model_copy(
        update={"decision": outcome.decision, "decided_at": tick.now, "message": message}
    )
    recorded = fields(gate=decided)
    if outcome.decision is GateDecision.REJECT:
        message = f"gate rejected {tick.spec.candidate.name}: {outcome.message}"
        rejected = SetCondition(ConditionType.COMPLETED, False, Reason.GATE_REJECTED, outcome.message)
        return Fail(Reason.GATE_REJECTED, message), (recorded, rejected, Say(Reason.GATE_REJECTED, message))
    passed = (
        recorded,
        Say(Reason.GATE_PASSED, f"gate decided {outcome.decision}: {outcome.message}"),
        fields(phase=Phase.PROGRESSING),
        Say(Reason.ROLLOUT_STARTED, f"candidate {tick.spec.candidate.name} passed the gate"),
    )
    start_at = tick.spec.gate.full.start_at_step
    if outcome.decision is GateDecision.FULL and start_at is None:
        return Succeed(), passed
    first, said = _first_step(tick, outcome.decision, start_at)
    return EnterStep(first), (*passed, *said)


def _first_step(
    tick: TickView, decision: GateDecision, start_at: int | None
) -> tuple[int, tuple[Effect, ...]]:
    """Where the steps start: startAtStep for a full release, else 0. A startAtStep past the steps
    (the CRD refuses it; a spec that never passed it) starts at 0 rather than skip the canary."""
    if decision is not GateDecision.FULL or start_at is None:
        return 0, ()
    if start_at >= len(tick.spec.steps):
        past = f"spec.gate.full.startAtStep {start_at} is past the {len(tick.spec.steps)} steps"
        return 0, (Say(Reason.GATE_PASSED, f"{past}: starting at step 0"),)
    return start_at, ()


def gate_pending(tick: TickView) -> bool:
    """Whether the rollout still owes its gate a run (set, and not decided for this rollout)."""
    return tick.spec.gate is not None and (tick.status.gate is None or tick.status.gate.decision is None)


def gate_command(tick: TickView, action: CommandAction) -> tuple[Intent, str, tuple[Effect, ...]] | None:
    """On the gate, `promote` accepts it as passed (a canary; `--full`, a full release where
    spec.gate.full allows one) and `abort` rejects it; None for a command that does not apply."""
    spec, gate = tick.spec.gate, tick.status.gate
    if spec is None or gate is None:
        return None  # the gate was removed: the tick starts the steps
    if action is CommandAction.ABORT:
        outcome, did = (
            GateOutcome(GateDecision.REJECT, "rejected by `modelgate abort`"),
            "the gate rejected the candidate",
        )
    elif action is CommandAction.PROMOTE:
        outcome = GateOutcome(GateDecision.CANARY, "passed by `modelgate promote`: a canary")
        did = "the gate passed the candidate: the steps start"
    elif action is CommandAction.PROMOTE_FULL and spec.full.allowed:
        outcome = GateOutcome(GateDecision.FULL, "passed by `modelgate promote --full`: a full release")
        did = "the gate passed the candidate for a full release"
    else:
        return None
    intent, decided = act_on(tick, outcome, gate)
    return intent, did, decided
