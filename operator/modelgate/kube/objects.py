"""Pure helpers over Kubernetes objects: whether a Deployment can take traffic, and the body of an
Event. No client calls here."""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from modelgate.core.reasons import clip, how_many

REPORTING_CONTROLLER = "modelgate.io/operator"
# events.k8s.io/v1 validation limits, in bytes (the API server measures Go string lengths).
EVENT_NOTE_LIMIT = 1024
EVENT_REASON_LIMIT = 128
EVENT_ACTION_LIMIT = 128
EVENT_INSTANCE_LIMIT = 128


@dataclass(frozen=True)
class DeploymentAvailability:
    exists: bool
    available: bool
    message: str


def availability(what: str, deployment: Mapping[str, Any]) -> DeploymentAvailability:
    """`deployment` as the API server returns it (JSON), or its essentials (cache.py)."""
    generation = deployment["metadata"].get("generation") or 0
    status = deployment.get("status") or {}
    observed = status.get("observedGeneration") or 0
    replicas_wanted = (deployment.get("spec") or {}).get("replicas")
    wanted = 1 if replicas_wanted is None else replicas_wanted
    total = status.get("replicas") or 0
    updated = status.get("updatedReplicas") or 0
    ready = status.get("availableReplicas") or 0
    replicas = f"{ready} of {wanted} replicas available"
    condition = next((c for c in status.get("conditions") or [] if c.get("type") == "Available"), None)

    if observed < generation:
        missing = f"the controller has not yet observed generation {generation} (observed {observed})"
    elif condition is None:
        missing = "it has no Available condition yet"
    elif condition.get("status") != "True":
        missing = f"it is not Available ({condition.get('reason')}: {condition.get('message')})"
    elif wanted < 1:
        missing = "it is scaled to zero replicas"
    elif updated < wanted:
        missing = f"{updated} of {wanted} replicas run the current template"
    elif total > updated:
        older = total - updated
        missing = f"{how_many(older, 'replica')} of an older template {_are(older)} still there"
    elif ready < updated:
        unready = updated - ready
        missing = f"{how_many(unready, 'replica')} of the current template {_are(unready)} not available yet"
    else:
        return DeploymentAvailability(exists=True, available=True, message=f"{what}: {replicas}")
    return DeploymentAvailability(exists=True, available=False, message=f"{what}: {missing}; {replicas}")


def event_body(
    involved: Mapping[str, Any], type_: str, reason: str, message: str, *, action: str, instance: str
) -> dict[str, Any]:
    """An events.k8s.io/v1 Event about `involved` (an object with apiVersion, kind and metadata), in
    its namespace; over-long texts are cut to the API's limits rather than rejected."""
    metadata = involved["metadata"]
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": _event_name(metadata["name"]), "namespace": metadata["namespace"]},
        "eventTime": _micro_time(datetime.now(UTC)),
        "type": type_,
        "reason": clip(reason, EVENT_REASON_LIMIT, utf8=True),
        "note": clip(message, EVENT_NOTE_LIMIT, utf8=True),
        "action": clip(action, EVENT_ACTION_LIMIT, utf8=True),
        "reportingController": REPORTING_CONTROLLER,
        "reportingInstance": clip(instance, EVENT_INSTANCE_LIMIT, utf8=True),
        "regarding": {
            "apiVersion": involved["apiVersion"],
            "kind": involved["kind"],
            "namespace": metadata["namespace"],
            "name": metadata["name"],
            "uid": metadata.get("uid"),
        },
    }


def _event_name(regarding: str) -> str:
    """`<regarding>.<hex time><random>`, as client-go names Events; the random part keeps two
    operator replicas apart. (generateName is no help: events.k8s.io/v1 validates the prefix itself as
    a DNS subdomain, and "name." is not one.)"""
    suffix = f".{time.time_ns():x}{secrets.token_hex(2)}"
    base = regarding[: 253 - len(suffix)].rstrip("-.")
    return base + suffix


def _micro_time(moment: datetime) -> str:
    # metav1.MicroTime: RFC 3339 with exactly six fractional digits.
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _are(count: int) -> str:
    return "is" if count == 1 else "are"
