"""Which transitions of a tick notify, kept in status until delivered, and the Notify actions that
deliver them (docs/notifications.md). Pure: the delivery (retries, receivers' answers) is the
operator's notifications/ package; what it finished comes back as an observation."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase
from modelgate.api.gate_status import GateDecision
from modelgate.api.notification_payload import GateOutcome, NotificationPayload, Weights
from modelgate.api.notifications import (
    MAX_PENDING,
    NotificationStatus,
    PendingNotification,
    Transition,
)
from modelgate.core.model import Notify, Observations, Outcome
from modelgate.core.reasons import Reason

_WARNING_TRANSITIONS = frozenset({Transition.ROLLED_BACK, Transition.FAILED, Transition.DEADLINE})
_ENDS = {
    Phase.ROLLED_BACK: Transition.ROLLED_BACK,
    Phase.SUCCEEDED: Transition.SUCCEEDED,
    Phase.FAILED: Transition.FAILED,
}


def transitions(
    before: ModelRolloutStatus, after: ModelRolloutStatus, outcome: Outcome | None
) -> Iterator[Transition]:
    """What the tick from `before` to `after` came to, in the order a reader would tell it."""
    if _gate_decision(before) is None and _gate_decision(after) is not None:
        yield Transition.GATE_DECIDED
    if _deadline_passed(before, after, outcome):
        yield Transition.DEADLINE
    if after.pause is not None and _pause_began(before, after):
        yield Transition.PAUSED
    stepping = after.phase in (Phase.PROGRESSING, Phase.PAUSED)
    if stepping and after.step_started_at != before.step_started_at:
        yield Transition.STEP_STARTED
    if after.phase is not before.phase and after.phase in _ENDS:
        yield _ENDS[after.phase]


def note_notifications(
    spec: ModelRolloutSpec,
    before: ModelRolloutStatus,
    after: ModelRolloutStatus,
    outcome: Outcome | None,
    observed: Observations,
    now: datetime,
) -> ModelRolloutStatus:
    """`after` with the tick's transitions that spec.notifications asks for added to the pending ones,
    and those whose delivery ended (observed.notified) removed. Each gets the next sequence number:
    deciding the same tick again from the same `before` gives the same keys."""
    noted = after.notifications or NotificationStatus()
    pending = [p for p in noted.pending if p.key(observed.uid) not in observed.notified]
    sequence = noted.sequence
    wanted = spec.notifications
    if wanted is not None and wanted.receivers:
        for transition in transitions(before, after, outcome):
            if transition in wanted.on:
                sequence += 1
                pending.append(PendingNotification(transition=transition, sequence=sequence, at=now))
    if sequence == 0 and after.notifications is None:
        return after
    kept = NotificationStatus(sequence=sequence, pending=tuple(pending[-MAX_PENDING:]))
    return after.model_copy(update={"notifications": kept})


def notify_actions(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations
) -> tuple[Notify, ...]:
    """One Notify per pending transition: asked again at every tick until its delivery ends (the
    delivery drops one it already has)."""
    if status.notifications is None:
        return ()
    checksum = spec_checksum(spec)
    return tuple(
        Notify(
            key=pending.key(observed.uid),
            pending=pending,
            rollout=observed.rollout,
            namespace=observed.namespace,
            uid=observed.uid,
            checksum=checksum,
            spec=spec,
            status=status,
        )
        for pending in status.notifications.pending
    )


def spec_checksum(spec: ModelRolloutSpec) -> str:
    return hashlib.sha256(spec.model_dump_json(by_alias=True).encode()).hexdigest()[:16]


def payload(notify: Notify) -> NotificationPayload:
    """What a webhook receiver gets for `notify`, from the status it was decided (and settled) with."""
    status, spec, transition = notify.status, notify.spec, notify.pending.transition
    gate = status.gate
    decided = None
    if gate is not None and gate.decision is not None:
        decided = GateOutcome(decision=gate.decision, message=gate.message)
    rejected = decided is not None and decided.decision is GateDecision.REJECT
    warning = transition in _WARNING_TRANSITIONS or (transition is Transition.GATE_DECIDED and rejected)
    metadata = {
        "eventType": "Warning" if warning else "Normal",
        "eventMessage": status.message or "",
        "candidate": spec.candidate.identity,
        "incumbent": spec.incumbent.identity,
    }
    return NotificationPayload(
        key=notify.key,
        transition=transition,
        at=notify.pending.at,
        name=notify.rollout,
        namespace=notify.namespace,
        uid=notify.uid,
        phase=status.phase,
        checksum=notify.checksum,
        metadata=metadata,
        message=status.message,
        candidate=spec.candidate.identity,
        incumbent=spec.incumbent.identity,
        step=status.current_step_index,
        steps=len(spec.steps),
        weights=Weights(candidate=status.current_weight, incumbent=100 - status.current_weight),
        rollback_reason=status.rollback_reason,
        gate=decided,
        pause=status.pause,
    )


def _gate_decision(status: ModelRolloutStatus) -> GateDecision | None:
    return None if status.gate is None else status.gate.decision


def _deadline_passed(before: ModelRolloutStatus, after: ModelRolloutStatus, outcome: Outcome | None) -> bool:
    """A progress deadline rolled back or failed the rollout, or began to hold it."""
    if outcome is not None and outcome.reason is Reason.PROGRESS_DEADLINE_EXCEEDED:
        return True
    return after.pause is not None and after.pause.reason.deadline and _pause_began(before, after)


def _pause_began(before: ModelRolloutStatus, after: ModelRolloutStatus) -> bool:
    return after.pause is not None and (before.pause is None or before.pause.reason is not after.pause.reason)
