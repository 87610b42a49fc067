"""Deployments, InferencePools and their Pods: what the operator reads of each side and the
incumbent's scale-down."""

from __future__ import annotations

import json
from typing import Any

from modelgate.kube.api_errors import NotFound
from modelgate.kube.connection import (
    Connection,
    Object,
    api_request,
    as_object,
)
from modelgate.kube.objects import DeploymentAvailability, availability
from modelgate.kube.pod_requests import requested
from modelgate.kube.pools import (
    INFERENCE_GROUP,
    INFERENCE_POOLS,
    INFERENCE_VERSION,
    PoolPod,
    endpoint_picker_service,
    pool_availability,
    pool_label_selector,
    pool_pod,
)


class Workloads(Connection):
    # -- built-in resources ----------------------------------------------------------------------
    def side_ready_replicas(self, namespace: str, kind: str, name: str) -> int:
        """A side's Ready replicas: a Deployment's status.readyReplicas, an InferencePool's Ready
        selected Pods; 0 when it does not exist."""
        if kind != "Deployment":
            return sum(pod.ready for pod in self.pool_pods(namespace, name) or [])
        deployment = self._deployment(namespace, name)
        return 0 if deployment is None else int((deployment.get("status") or {}).get("readyReplicas") or 0)

    def deployment_availability(self, namespace: str, name: str) -> DeploymentAvailability:
        """Whether the Deployment can take traffic now: its own rollout is complete and available,
        the test `kubectl rollout status` and Flagger apply. All of:

        - status.observedGeneration >= metadata.generation: the status describes the current spec;
        - its `Available` condition is True;
        - updatedReplicas >= spec.replicas >= 1: every wanted replica runs the current template
          (zero replicas can serve nothing, though `Available` is True for them);
        - status.replicas == updatedReplicas: no pod of an older template is left, which would
          keep `Available` True while the new template cannot even be scheduled;
        - availableReplicas >= updatedReplicas: the new pods are Ready, not merely created.

        The message names the first of these that is missing, then "<available> of <spec.replicas>
        replicas available".
        """
        what = f"Deployment {namespace}/{name}"
        deployment = self._deployment(namespace, name)
        if deployment is None:
            return DeploymentAvailability(exists=False, available=False, message=f"{what} not found")
        return availability(what, deployment)

    def _deployment(self, namespace: str, name: str) -> Object | None:
        """The cached Deployment (its essentials), else the API server's; None when it does not exist."""
        cache = self.caches.get("deployments")
        deployment = None if cache is None else cache.get(namespace, name)
        if deployment is not None:
            return deployment
        try:
            with api_request("get"):
                # The JSON as sent: the typed model's deserialization costs more than the read.
                response: Any = self._apps.read_namespaced_deployment(
                    name, namespace, _preload_content=False, _request_timeout=self.request_timeout
                )
        except NotFound:
            return None
        return self._remember("deployments", as_object(json.loads(response.data)))

    def scale_deployment(self, namespace: str, name: str, replicas: int) -> None:
        """Sets the Deployment's replicas through its scale subresource (`patch` on deployments/scale,
        the only write the operator makes to a Deployment)."""
        with api_request("patch"):
            self._apps.patch_namespaced_deployment_scale(
                name, namespace, {"spec": {"replicas": replicas}}, _request_timeout=self.request_timeout
            )

    def deployment_pods(self, namespace: str, name: str) -> list[str]:
        """The names of the Deployment's Pods (by its selector), but for those being deleted; none when
        it does not exist."""
        items = self._deployment_pod_objects(namespace, name)
        return sorted(pod.name for pod in map(pool_pod, items) if pod is not None)

    def side_accelerators(self, namespace: str, kind: str, name: str, resource: str) -> float:
        """What the side's Ready Pods request of `resource` (kube/pod_requests.py); 0 when the side
        does not exist or a request is not a quantity."""
        if kind == "Deployment":
            pods = self._deployment_pod_objects(namespace, name)
        else:
            try:
                pool = self.get_custom(INFERENCE_GROUP, INFERENCE_VERSION, namespace, INFERENCE_POOLS, name)
            except NotFound:
                return 0.0
            pods = self._pod_objects(namespace, pool_label_selector(pool))
        try:
            return requested(pods, resource)
        except ValueError:
            return 0.0

    def _deployment_pod_objects(self, namespace: str, name: str) -> list[Object]:
        deployment = self._deployment(namespace, name)
        labels = ((deployment or {}).get("spec") or {}).get("selector", {}).get("matchLabels") or {}
        if not labels:
            return []
        return self._pod_objects(
            namespace, ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
        )

    def _pod_objects(self, namespace: str, label_selector: str) -> list[Object]:
        return self.list_selected(self._core.list_namespaced_pod, namespace, label_selector)

    def pool_pods(self, namespace: str, name: str) -> list[PoolPod] | None:
        """The Pods an InferencePool selects (by its spec.selector, in its namespace), but for those
        being deleted; None when the pool does not exist. The pool comes from the watch cache; the
        Pods are listed, by the selector, at each call."""
        try:
            pool = self.get_custom(INFERENCE_GROUP, INFERENCE_VERSION, namespace, INFERENCE_POOLS, name)
        except NotFound:
            return None
        items = self._pod_objects(namespace, pool_label_selector(pool))
        return [pod for pod in map(pool_pod, items) if pod is not None]

    def pool_endpoint_picker(self, namespace: str, name: str) -> str | None:
        """The Service of the InferencePool's endpoint picker (from the watch cache); None when the
        pool does not exist or names no Service."""
        try:
            pool = self.get_custom(INFERENCE_GROUP, INFERENCE_VERSION, namespace, INFERENCE_POOLS, name)
        except NotFound:
            return None
        return endpoint_picker_service(pool)

    def pool_availability(self, namespace: str, name: str, field: str) -> DeploymentAvailability:
        """Whether the InferencePool can take traffic: it selects at least one Pod and all of them are
        Ready. The message names the pool and `field`, the spec field that names it, then "<ready> of
        <selected> selected Pods Ready"."""
        what = f"InferencePool {namespace}/{name} ({field})"
        return pool_availability(what, self.pool_pods(namespace, name))
