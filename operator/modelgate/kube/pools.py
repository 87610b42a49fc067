"""Pure helpers over InferencePools and the Pods they select.

Pure helpers over InferencePools (inference.networking.k8s.io/v1) and the Pods they select: the
selector as a label query, and whether the selected Pods can take traffic. No client calls here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.kube.objects import DeploymentAvailability

INFERENCE_GROUP = "inference.networking.k8s.io"
INFERENCE_VERSION = "v1"
INFERENCE_POOLS = "inferencepools"


@dataclass(frozen=True)
class PoolPod:
    """What modelgate needs of a Pod an InferencePool selects."""

    name: str
    generate_name: str | None  # the owner's prefix, e.g. "chat-v2-7d9f8b6c5-" for a ReplicaSet's Pod
    ready: bool


def pool_label_selector(pool: Mapping[str, Any]) -> str:
    """The pool's spec.selector.matchLabels as a label selector (`key=value,...`). v1 selects by
    matchLabels only, and its schema requires at least one."""
    labels: Mapping[str, str] = ((pool.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return ",".join(f"{key}={value}" for key, value in sorted(labels.items()))


def endpoint_picker_service(pool: Mapping[str, Any]) -> str | None:
    """The Service the pool's spec.endpointPickerRef names (its kind defaults to Service, in the
    pool's namespace); None when it names none, or another kind of object."""
    ref: Mapping[str, Any] = (pool.get("spec") or {}).get("endpointPickerRef") or {}
    if not ref.get("name") or ref.get("group", "") != "" or ref.get("kind", "Service") != "Service":
        return None
    return str(ref["name"])


def pool_pod(pod: Mapping[str, Any]) -> PoolPod | None:
    """A listed Pod (JSON, as the API server returns it); None for one being deleted, which a gateway
    no longer sends requests to."""
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp"):
        return None
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return PoolPod(str(meta["name"]), meta.get("generateName") or None, ready)


def pool_availability(what: str, pods: Sequence[PoolPod] | None) -> DeploymentAvailability:
    """Whether the pool can take traffic: it exists, selects at least one Pod, and every Pod it
    selects is Ready (as a Deployment must have all its replicas available). `pods` is None when the
    pool does not exist."""
    if pods is None:
        return DeploymentAvailability(exists=False, available=False, message=f"{what} not found")
    ready = sum(pod.ready for pod in pods)
    counted = f"{ready} of {len(pods)} selected Pods Ready"
    if not pods:
        return DeploymentAvailability(exists=True, available=False, message=f"{what}: it selects no Pods")
    if ready < len(pods):
        return DeploymentAvailability(exists=True, available=False, message=f"{what}: {counted}")
    return DeploymentAvailability(exists=True, available=True, message=f"{what}: {counted}")
