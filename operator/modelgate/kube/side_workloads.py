"""A side that is any workload: a StatefulSet, a LeaderWorkerSet or any kind with a scale subresource.

What the operator reads of a side named by spec.<side>.workload (not an apps/v1 Deployment, which
kube/workloads.py reads): whether it can serve, its serving Pods (a LeaderWorkerSet's leaders), all
its Pods (accelerators are counted over a LeaderWorkerSet's workers too), its Ready replicas, and the
scale-down of an incumbent through its scale subresource. A kind other than StatefulSet and
LeaderWorkerSet is found through the API server's discovery (cached per apiVersion)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from modelgate.api.workload_object import WorkloadObjectRef
from modelgate.kube.api_errors import KubeError, NotFound
from modelgate.kube.connection import Connection, Object, api_request, as_object
from modelgate.kube.objects import DeploymentAvailability
from modelgate.kube.pools import PoolPod, pool_pod
from modelgate.kube.workload_status import (
    LWS_GROUP,
    leaderworkerset_availability,
    lws_group_selector,
    lws_leader_selector,
    scale_selector,
    scaled_availability,
    statefulset_availability,
)


class WorkloadKindError(ValueError):
    """A workload's kind that modelgate cannot read: unknown to the API server, or without a scale
    subresource. The message names the field and what was expected."""


@dataclass(frozen=True)
class WorkloadResource:
    group: str
    version: str
    plural: str


# The kinds read by their own status; any other is read through its scale subresource.
_KNOWN = {
    ("apps", "StatefulSet"): "statefulsets",
    (LWS_GROUP, "LeaderWorkerSet"): "leaderworkersets",
}


def _group_version(ref: WorkloadObjectRef) -> tuple[str, str]:
    group, _, version = ref.api_version.rpartition("/")
    return group, version


class SideWorkloads(Connection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._discovered: dict[str, list[Object]] = {}
        self._discovery_lock = threading.Lock()

    def workload_availability(
        self, namespace: str, ref: WorkloadObjectRef, field: str
    ) -> DeploymentAvailability:
        """Whether the workload can take traffic (kube/workload_status.py says when, per kind); the
        message names it and `field`, the spec field that names it."""
        what = f"{ref.kind} {namespace}/{ref.name} ({field})"
        group, _ = _group_version(ref)
        try:
            if (group, ref.kind) == ("apps", "StatefulSet"):
                return statefulset_availability(what, self._workload(namespace, ref))
            if (group, ref.kind) == (LWS_GROUP, "LeaderWorkerSet"):
                return leaderworkerset_availability(what, self._workload(namespace, ref))
            scale = self._scale(namespace, ref)
            selector = scale_selector(f"{ref.kind} {namespace}/{ref.name}", field, scale)
            pods = self._pod_objects(namespace, selector)
            return scaled_availability(what, scale, [p for p in map(pool_pod, pods) if p is not None])
        except NotFound:
            return DeploymentAvailability(exists=False, available=False, message=f"{what} not found")
        except WorkloadKindError as error:
            return DeploymentAvailability(exists=False, available=False, message=f"{field}: {error}")
        except ValueError as error:  # a scale subresource without a selector
            return DeploymentAvailability(exists=True, available=False, message=str(error))

    def workload_serving_pods(self, namespace: str, ref: WorkloadObjectRef) -> list[PoolPod] | None:
        """The Pods that serve (a LeaderWorkerSet's leaders, else every Pod the workload selects),
        but for those being deleted; None when the workload, or its selector, cannot be read."""
        try:
            selector = self._selector(namespace, ref, serving=True)
        except (KubeError, ValueError):
            return None
        return [pod for pod in map(pool_pod, self._pod_objects(namespace, selector)) if pod is not None]

    def workload_pod_objects(self, namespace: str, ref: WorkloadObjectRef) -> list[Object]:
        """All the workload's Pods (a LeaderWorkerSet's workers too); none when it cannot be read."""
        try:
            return self._pod_objects(namespace, self._selector(namespace, ref, serving=False))
        except (KubeError, ValueError):
            return []

    def workload_ready_replicas(self, namespace: str, ref: WorkloadObjectRef) -> int:
        """Ready replicas: a StatefulSet's readyReplicas, a LeaderWorkerSet's Ready groups, else its
        Ready selected Pods; 0 when it cannot be read."""
        group, _ = _group_version(ref)
        try:
            if (group, ref.kind) in _KNOWN:
                status = self._workload(namespace, ref).get("status") or {}
                return int(status.get("readyReplicas") or 0)
        except KubeError:
            return 0
        return sum(pod.ready for pod in self.workload_serving_pods(namespace, ref) or [])

    def scale_workload(self, namespace: str, ref: WorkloadObjectRef, replicas: int) -> None:
        """Sets the workload's replicas through its scale subresource (`patch` on <plural>/scale)."""
        resource = self._resource(ref)
        with api_request("patch"):
            self._custom.patch_namespaced_custom_object_scale(
                resource.group,
                resource.version,
                namespace,
                resource.plural,
                ref.name,
                {"spec": {"replicas": replicas}},
                _request_timeout=self.request_timeout,
            )

    def _selector(self, namespace: str, ref: WorkloadObjectRef, *, serving: bool) -> str:
        group, _ = _group_version(ref)
        if (group, ref.kind) == (LWS_GROUP, "LeaderWorkerSet"):
            self._workload(namespace, ref)  # NotFound when it is not there
            return lws_leader_selector(ref.name) if serving else lws_group_selector(ref.name)
        scale = self._scale(namespace, ref)
        return scale_selector(f"{ref.kind} {namespace}/{ref.name}", "workload", scale)

    def _workload(self, namespace: str, ref: WorkloadObjectRef) -> Object:
        resource = self._resource(ref)
        return self.get_custom(resource.group, resource.version, namespace, resource.plural, ref.name)

    def _scale(self, namespace: str, ref: WorkloadObjectRef) -> Object:
        resource = self._resource(ref)
        with api_request("get"):
            return as_object(
                self._custom.get_namespaced_custom_object_scale(
                    resource.group,
                    resource.version,
                    namespace,
                    resource.plural,
                    ref.name,
                    _request_timeout=self.request_timeout,
                )
            )

    def _pod_objects(self, namespace: str, label_selector: str) -> list[Object]:
        return self.list_selected(self._core.list_namespaced_pod, namespace, label_selector)

    def _resource(self, ref: WorkloadObjectRef) -> WorkloadResource:
        """The kind's resource, by the API server's discovery for kinds other than StatefulSet and
        LeaderWorkerSet; WorkloadKindError when it is unknown or has no scale subresource."""
        group, version = _group_version(ref)
        known = _KNOWN.get((group, ref.kind))
        if known is not None:
            return WorkloadResource(group, version, known)
        resources = self._discover(ref.api_version)
        plural = next(
            (r["name"] for r in resources if r.get("kind") == ref.kind and "/" not in r["name"]), None
        )
        if plural is None:
            raise WorkloadKindError(
                f"the API server serves no kind {ref.kind} in {ref.api_version}: expected a workload "
                "kind (apps/v1 StatefulSet, leaderworkerset.x-k8s.io/v1 LeaderWorkerSet, or a kind "
                "with a scale subresource)"
            )
        if not any(r["name"] == f"{plural}/scale" for r in resources):
            raise WorkloadKindError(
                f"{ref.kind} ({ref.api_version}) has no scale subresource: modelgate reads a "
                "workload of another kind through its scale subresource (status.replicas and "
                "status.selector)"
            )
        return WorkloadResource(group, version, plural)

    def _discover(self, api_version: str) -> list[Object]:
        """The resources of an API group version (cached: they change only with CRDs)."""
        with self._discovery_lock:
            held = self._discovered.get(api_version)
        if held is not None:
            return held
        group, _, version = api_version.rpartition("/")
        try:
            with api_request("get"):
                found: Any = (
                    self._custom.get_api_resources(group, version, _request_timeout=self.request_timeout)
                    if group
                    else self._core.get_api_resources(_request_timeout=self.request_timeout)
                )
        except NotFound:
            return []
        resources = [{"name": r.name, "kind": r.kind} for r in found.resources or []]
        with self._discovery_lock:
            self._discovered[api_version] = resources
        return resources
