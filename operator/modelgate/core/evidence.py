"""A metric breach's evidence (the requests behind it, the metric per pod) folded into the decision that
rolled back: `status.rollbackReason.traces` and `.pods`, and the end of the RolledBack Event."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from modelgate.api import BreachTrace, ModelRolloutStatus, PodValue
from modelgate.core.model import Event
from modelgate.core.reasons import Reason


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
