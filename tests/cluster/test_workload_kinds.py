"""Workload sides of other kinds against the bed's real controllers: a StatefulSet (the statefulset
controller of kube-controller-manager makes its Pods, kwok runs them) and a ReplicaSet read as "any
other kind", through the API server's discovery and its scale subresource; scale-down through the
scale subresource of each; a kind without one refused naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import WorkloadRef
from modelgate.kube import Kube
from testbed.manifests import model_deployment
from testbed.waiting import wait_for
from tests.support.kube import create

FIELD = "spec.candidate.workload"


@pytest.fixture
def kube(api_client: client.ApiClient) -> Kube:
    return Kube(api_client)


def side(api_version: str, kind: str, name: str) -> WorkloadRef:
    return WorkloadRef.model_validate({"workload": {"apiVersion": api_version, "kind": kind, "name": name}})


def workload_of(kind: str, name: str, namespace: str, replicas: int) -> dict[str, Any]:
    """A model Deployment's manifest as another kind of apps/v1 workload with the same Pods."""
    manifest = copy.deepcopy(model_deployment(name, namespace, replicas=replicas))
    manifest["kind"] = kind
    if kind == "StatefulSet":
        manifest["spec"]["serviceName"] = name
    return manifest


def available(kube: Kube, namespace: str, ref: WorkloadRef) -> bool:
    return kube.side_availability(namespace, ref, FIELD).available


def test_a_statefulset_is_available_once_its_pods_are_ready_and_scales_to_zero(
    kube: Kube, api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, workload_of("StatefulSet", "chat-v2", namespace, replicas=2))
    ref = side("apps/v1", "StatefulSet", "chat-v2")
    wait_for(lambda: available(kube, namespace, ref), timeout=60, what="the StatefulSet available")
    assert [pod.name for pod in kube.side_serving_pods(namespace, ref) or []] == ["chat-v2-0", "chat-v2-1"]
    assert kube.side_ready_replicas(namespace, ref) == 2
    kube.scale_side(namespace, ref, replicas=0)
    apps = client.AppsV1Api(api_client)
    assert apps.read_namespaced_stateful_set("chat-v2", namespace).spec.replicas == 0
    found = wait_for(
        lambda: (a := kube.side_availability(namespace, ref, FIELD)) and not a.available and a,
        timeout=30,
        what="the StatefulSet unavailable at zero replicas",
    )
    assert "scaled to zero" in found.message


def test_another_kind_is_read_through_discovery_and_its_scale_subresource(
    kube: Kube, api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, workload_of("ReplicaSet", "chat-v2", namespace, replicas=2))
    ref = side("apps/v1", "ReplicaSet", "chat-v2")
    wait_for(lambda: available(kube, namespace, ref), timeout=60, what="the ReplicaSet available")
    pods = kube.side_serving_pods(namespace, ref) or []
    assert len(pods) == 2 and all(pod.name.startswith("chat-v2-") for pod in pods)
    kube.scale_side(namespace, ref, replicas=1)
    apps = client.AppsV1Api(api_client)
    assert apps.read_namespaced_replica_set("chat-v2", namespace).spec.replicas == 1


def test_a_kind_without_a_scale_subresource_or_unknown_is_refused_naming_the_field(
    kube: Kube, namespace: str
) -> None:
    no_scale = kube.side_availability(namespace, side("v1", "ConfigMap", "chat-v2"), FIELD)
    assert not no_scale.available
    assert no_scale.message.startswith(f"{FIELD}: ConfigMap (v1) has no scale subresource")
    unknown = kube.side_availability(namespace, side("example.com/v1", "Server", "chat-v2"), FIELD)
    assert unknown.message.startswith(f"{FIELD}: the API server serves no kind Server in example.com/v1")
