"""Pure rules for whether a StatefulSet, a LeaderWorkerSet or any scalable workload can serve.

Pure rules over the JSON the API server returns: whether a StatefulSet, a LeaderWorkerSet or any
workload read through its scale subresource can take traffic now, and which of its Pods serve. No
client calls here (kube/side_workloads.py reads)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelgate.core.reasons import how_many
from modelgate.kube.objects import DeploymentAvailability
from modelgate.kube.pools import PoolPod

LWS_GROUP = "leaderworkerset.x-k8s.io"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


def lws_leader_selector(name: str) -> str:
    """The leader Pods of a LeaderWorkerSet (worker 0 of each group): they serve."""
    return f"{LWS_NAME_LABEL}={name},{LWS_WORKER_INDEX_LABEL}=0"


def lws_group_selector(name: str) -> str:
    """Every Pod of a LeaderWorkerSet, leaders and workers: what its accelerators are counted over."""
    return f"{LWS_NAME_LABEL}={name}"


def _wanted(obj: Mapping[str, Any]) -> int:
    replicas = (obj.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def _unavailable(what: str, missing: str, counted: str) -> DeploymentAvailability:
    return DeploymentAvailability(exists=True, available=False, message=f"{what}: {missing}; {counted}")


def statefulset_availability(what: str, statefulset: Mapping[str, Any]) -> DeploymentAvailability:
    """Whether the StatefulSet can take traffic: its status describes the current spec
    (observedGeneration), every wanted replica (at least one) runs the current revision
    (updatedReplicas == replicas, currentRevision == updateRevision) and is Ready and available."""
    generation = statefulset["metadata"].get("generation") or 0
    status = statefulset.get("status") or {}
    observed = status.get("observedGeneration") or 0
    wanted = _wanted(statefulset)
    updated = status.get("updatedReplicas") or 0
    ready = min(status.get("readyReplicas") or 0, status.get("availableReplicas") or 0)
    counted = f"{ready} of {wanted} replicas Ready"
    if observed < generation:
        missing = f"the controller has not yet observed generation {generation} (observed {observed})"
    elif wanted < 1:
        missing = "it is scaled to zero replicas"
    elif updated < wanted:
        missing = f"{updated} of {wanted} replicas run the current revision"
    elif status.get("currentRevision") != status.get("updateRevision"):
        missing = f"its update to revision {status.get('updateRevision')} is not complete"
    elif (status.get("replicas") or 0) > wanted:
        missing = f"{how_many((status.get('replicas') or 0) - wanted, 'replica')} too many still there"
    elif ready < wanted:
        missing = f"{how_many(wanted - ready, 'replica')} not Ready yet"
    else:
        return DeploymentAvailability(exists=True, available=True, message=f"{what}: {counted}")
    return _unavailable(what, missing, counted)


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)


def leaderworkerset_availability(what: str, lws: Mapping[str, Any]) -> DeploymentAvailability:
    """Whether the LeaderWorkerSet can take traffic: Available, neither Progressing nor
    UpdateInProgress (its conditions, leaderworkerset.x-k8s.io/v1), the Available condition of the
    current generation, and every wanted group (spec.replicas, at least one) Ready."""
    generation = lws["metadata"].get("generation") or 0
    status = lws.get("status") or {}
    wanted = _wanted(lws)
    ready = status.get("readyReplicas") or 0
    counted = f"{ready} of {wanted} groups Ready"
    available = _condition(status, "Available")
    busy = [
        kind
        for kind in ("Progressing", "UpdateInProgress")
        if (_condition(status, kind) or {}).get("status") == "True"
    ]
    observed = None if available is None else available.get("observedGeneration")
    if available is None:
        missing = "it has no Available condition yet"
    elif observed is not None and observed < generation:
        missing = f"the controller has not yet observed generation {generation} (observed {observed})"
    elif available.get("status") != "True":
        missing = f"it is not Available ({available.get('reason')}: {available.get('message')})"
    elif busy:
        missing = f"it is {' and '.join(busy)}"
    elif wanted < 1:
        missing = "it is scaled to zero groups"
    elif ready < wanted:
        missing = f"{how_many(wanted - ready, 'group')} not Ready yet"
    else:
        return DeploymentAvailability(exists=True, available=True, message=f"{what}: {counted}")
    return _unavailable(what, missing, counted)


def scale_selector(what: str, field: str, scale: Mapping[str, Any]) -> str:
    """The Pod selector of a scale subresource (autoscaling/v1 Scale's status.selector); ValueError
    naming `field` when it has none, since without it the workload's Pods cannot be found."""
    selector = (scale.get("status") or {}).get("selector")
    if not selector:
        raise ValueError(
            f"{field}: {what} has a scale subresource without status.selector: modelgate finds a "
            "workload's Pods by the label selector its scale subresource reports (set "
            "labelSelectorPath in its CRD's scale subresource)"
        )
    return str(selector)


def scaled_availability(
    what: str, scale: Mapping[str, Any], pods: Sequence[PoolPod]
) -> DeploymentAvailability:
    """Whether a workload read through its scale subresource can take traffic: status.replicas ==
    spec.replicas >= 1, and every Pod its selector selects (at least one) is Ready."""
    wanted = int((scale.get("spec") or {}).get("replicas") or 0)
    replicas = int((scale.get("status") or {}).get("replicas") or 0)
    ready = sum(pod.ready for pod in pods)
    counted = f"{ready} of {len(pods)} selected Pods Ready"
    if wanted < 1:
        missing = "it is scaled to zero replicas"
    elif replicas != wanted:
        missing = f"{replicas} of {wanted} replicas reported by its scale subresource"
    elif not pods:
        missing = "its selector selects no Pods"
    elif ready < len(pods):
        missing = f"{how_many(len(pods) - ready, 'Pod')} not Ready yet"
    else:
        return DeploymentAvailability(exists=True, available=True, message=f"{what}: {counted}")
    return _unavailable(what, missing, counted)


def serving_pod_regex(kind: str, name: str) -> str | None:
    """The names of the Pods that serve, where the kind fixes them: a StatefulSet's
    `<name>-<ordinal>`, a LeaderWorkerSet's leaders `<name>-<group>` (its workers are
    `<name>-<group>-<index>`, which this does not match). None: from the Pods themselves."""
    if kind in ("StatefulSet", "LeaderWorkerSet"):
        return f"{name}-[0-9]+"
    return None
