"""What a tick tells: the Events it posts, a breach's evidence in the decision that rolled back, and
the transitions that notify, kept in status until delivered, with the Notify actions that deliver
them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from modelgate.api import BreachTrace, ModelRolloutSpec, ModelRolloutStatus, Phase, PodValue
from modelgate.api.gate_status import GateDecision
from modelgate.api.notification_payload import GateOutcome, NotificationPayload, Weights
from modelgate.api.notifications import MAX_PENDING, NotificationStatus, PendingNotification, Transition
from modelgate.core.model import Event, Notify, Observations, Outcome
from modelgate.core.reasons import EventType, Reason

# -- notifying -------------------------------------------------------------------------------------
# Which transitions of a tick notify, kept in status until delivered, and the Notify actions that deliver them
# (docs/notifications.md). Pure: the delivery (retries, receivers' answers) is the operator's notifications/
# package; what it finished comes back as an observation.


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


# -- events ----------------------------------------------------------------------------------------
# Which Events a tick posts: every Warning on its own, and the tick's routine progress (a step completed, the
# next one's weight, the rollout's start or end) as one Event, since each Event is a request to the API server
# and a step transition alone names two to four of them.
#
# The tick's decision keeps every transition (the operator logs each one); only what is posted is combined, so
# no information is lost: the combined Event's message is all of theirs, in order.


# A combined Event is named after the first of these its parts have: the rollout's end, what started
# the tick's changes (a new rollout, a command), the rollout's start, where the new step stands, and
# last a step's completion.
_HEADLINES = (
    Reason.ROLLOUT_SUCCEEDED,
    Reason.NEW_ROLLOUT,
    Reason.SPEC_CHANGED,
    Reason.RETRY,
    Reason.PROMOTED,
    Reason.RESUMED,
    Reason.ROLLOUT_STARTED,
    Reason.PAUSED,
    Reason.WEIGHT_SET,
    Reason.MIRROR_SET,
    Reason.MIRROR_REMOVED,
    Reason.STEP_COMPLETED,
)


def events_to_post(events: tuple[Event, ...]) -> tuple[Event, ...]:
    """The tick's Normal Events as one, where the first of them was; the Warnings as they are."""
    routine = [event for event in events if event.type is EventType.NORMAL]
    if len(routine) < 2:
        return events
    reasons = {event.reason for event in routine}
    headline = next((reason for reason in _HEADLINES if reason in reasons), routine[0].reason)
    combined = Event(headline, "; ".join(event.message for event in routine))
    first = events.index(routine[0])
    return tuple(
        combined if index == first else event
        for index, event in enumerate(events)
        if index == first or event.type is EventType.WARNING
    )


# -- evidence --------------------------------------------------------------------------------------
# A metric breach's evidence (the requests behind it, the metric per pod) folded into the decision that rolled
# back: `status.rollbackReason.traces` and `.pods`, and the end of the RolledBack Event.


@dataclass(frozen=True)
class BreachEvidence:
    """What stood behind a metric breach: a few of the requests (trace IDs from exemplars, worst first)
    and the metric per candidate pod (worst first). Empty where the backend has nothing to say."""

    traces: tuple[BreachTrace, ...] = ()
    pods: tuple[PodValue, ...] = ()


def with_evidence(
    status: ModelRolloutStatus, traces: tuple[BreachTrace, ...], pods: tuple[PodValue, ...]
) -> tuple[ModelRolloutStatus, Callable[[Event], Event]]:
    """The status with the evidence in its rollback reason, and what it makes of each Event (the
    RolledBack one ends with its summary)."""
    reason = status.rollback_reason
    if reason is None or not (traces or pods):
        return status, lambda event: event
    status = status.model_copy(
        update={"rollback_reason": reason.model_copy(update={"traces": traces, "pods": pods})}
    )
    summary = describe(traces, pods)

    def evidenced(event: Event) -> Event:
        if event.reason is Reason.ROLLED_BACK:
            return Event(event.reason, f"{event.message}; {summary}")
        return event

    return status, evidenced


def describe(traces: tuple[BreachTrace, ...], pods: tuple[PodValue, ...]) -> str:
    """E.g. "by pod: chat-v2-7d9f-abcde 0.21, chat-v2-7d9f-fghij 0; traces: 4bf9... (chat-v2-7d9f-abcde)"."""
    parts = []
    if pods:
        parts.append(
            "by pod: " + ", ".join(f"{p.pod} {'-' if p.value is None else f'{p.value:.4g}'}" for p in pods)
        )
    if traces:
        parts.append("traces: " + ", ".join(f"{t.trace_id} ({t.pod or 'pod unknown'})" for t in traces))
    return "; ".join(parts)
