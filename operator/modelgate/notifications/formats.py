"""What each kind of receiver is sent: a webhook's payload, Slack's, MS Teams'.

What each kind of receiver is sent for one notification: the payload as it is (webhook), a Slack
incoming webhook's text and blocks, an MS Teams MessageCard. Pure."""

from __future__ import annotations

from typing import Any

from modelgate.api.notification_payload import NotificationPayload
from modelgate.api.notifications import ReceiverKind

_TEAMS_COLOURS = {"Warning": "D93F0B", "Normal": "2EB886"}


def body(kind: ReceiverKind, payload: NotificationPayload) -> dict[str, Any]:
    match kind:
        case ReceiverKind.WEBHOOK:
            return payload.model_dump(by_alias=True, mode="json")
        case ReceiverKind.SLACK:
            return _slack(payload)
        case ReceiverKind.MSTEAMS:
            return _teams(payload)


def headline(payload: NotificationPayload) -> str:
    return f"ModelRollout {payload.namespace}/{payload.name}: {payload.transition.value}"


def facts(payload: NotificationPayload) -> list[tuple[str, str]]:
    """What a person reads first, in order: the sides, the step, the weights, why."""
    shown = [
        ("Phase", str(payload.phase.value if payload.phase else "")),
        ("Candidate", payload.candidate),
        ("Incumbent", payload.incumbent),
        ("Step", f"{payload.step} of {payload.steps}"),
        ("Weights", f"candidate {payload.weights.candidate}%, incumbent {payload.weights.incumbent}%"),
    ]
    reason = payload.rollback_reason
    if reason is not None:
        shown.append(("Rollback reason", reason.message))
        if reason.metric is not None:
            shown.append(("Metric", f"{reason.metric} = {reason.value} (threshold {reason.threshold})"))
        if reason.traces:
            shown.append(("Traces", ", ".join(trace.trace_id for trace in reason.traces)))
    if payload.gate is not None:
        shown.append(("Gate", f"{payload.gate.decision.value}: {payload.gate.message or ''}".rstrip(": ")))
    if payload.pause is not None:
        shown.append(("Paused", f"{payload.pause.reason.value}: {payload.pause.message}"))
    shown.append(("Key", payload.key))
    return shown


def _slack(payload: NotificationPayload) -> dict[str, Any]:
    lines = "\n".join(f"*{name}*: {value}" for name, value in facts(payload))
    return {
        "text": f"{headline(payload)}: {payload.message or ''}".rstrip(": "),
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "text": headline(payload)[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": lines[:3000]}},
        ],
    }


def _teams(payload: NotificationPayload) -> dict[str, Any]:
    return {
        "@type": "MessageCard",
        "@context": "https://schema.org/extensions",
        "summary": headline(payload),
        "themeColor": _TEAMS_COLOURS.get(payload.metadata.get("eventType", ""), "0076D7"),
        "title": headline(payload),
        "text": payload.message or "",
        "sections": [{"facts": [{"name": name, "value": value} for name, value in facts(payload)]}],
    }
