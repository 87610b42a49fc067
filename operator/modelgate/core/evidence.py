"""A metric breach's evidence (the requests behind it, the metric per pod) folded into the decision that
rolled back: `status.rollbackReason.traces` and `.pods`, and the end of the RolledBack Event."""

from __future__ import annotations

from dataclasses import dataclass, replace

from modelgate.api import BreachTrace, PodValue
from modelgate.core.model import Decision, Event
from modelgate.core.reasons import Reason


@dataclass(frozen=True)
class BreachEvidence:
    """What stood behind a metric breach: a few of the requests (trace IDs from exemplars, worst first)
    and the metric per candidate pod (worst first). Empty where the backend has nothing to say."""

    traces: tuple[BreachTrace, ...] = ()
    pods: tuple[PodValue, ...] = ()


def with_evidence(
    decision: Decision, traces: tuple[BreachTrace, ...], pods: tuple[PodValue, ...]
) -> Decision:
    reason = decision.status.rollback_reason
    if reason is None or not (traces or pods):
        return decision
    status = decision.status.model_copy(
        update={"rollback_reason": reason.model_copy(update={"traces": traces, "pods": pods})}
    )
    summary = describe(traces, pods)
    events = tuple(
        Event(event.reason, f"{event.message}; {summary}") if event.reason is Reason.ROLLED_BACK else event
        for event in decision.events
    )
    return replace(decision, status=status, events=events)


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
