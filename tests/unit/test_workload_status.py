"""Whether a StatefulSet, a LeaderWorkerSet or a workload of another kind can serve, over the JSON
their controllers write; and the generic path's discovery: a kind found by the API server's
discovery is read through its scale subresource, one without it is refused naming the field."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes import client

from modelgate.api.workload_object import WorkloadObjectRef
from modelgate.kube.pools import PoolPod
from modelgate.kube.side_workloads import SideWorkloads
from modelgate.kube.workload_status import (
    leaderworkerset_availability,
    scaled_availability,
    statefulset_availability,
)

# As the statefulset controller of Kubernetes 1.36 writes it, its update complete.
STATEFULSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "chat-v2", "namespace": "serving", "generation": 2},
    "spec": {"replicas": 2, "serviceName": "chat-v2"},
    "status": {
        "observedGeneration": 2,
        "replicas": 2,
        "readyReplicas": 2,
        "currentReplicas": 2,
        "updatedReplicas": 2,
        "availableReplicas": 2,
        "currentRevision": "chat-v2-7c9d8f6b5",
        "updateRevision": "chat-v2-7c9d8f6b5",
        "collisionCount": 0,
    },
}
# As LeaderWorkerSet v0.7.0's controller writes it: two groups, all Ready.
LEADERWORKERSET: dict[str, Any] = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1",
    "kind": "LeaderWorkerSet",
    "metadata": {"name": "chat-v2", "namespace": "serving", "generation": 1},
    "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2}},
    "status": {
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "AllGroupsReady",
                "observedGeneration": 1,
                "message": "All replicas are ready",
            },
            {
                "type": "Progressing",
                "status": "False",
                "reason": "GroupsProgressing",
                "observedGeneration": 1,
                "message": "Replicas are progressing",
            },
            {
                "type": "UpdateInProgress",
                "status": "False",
                "reason": "UpdatesDone",
                "observedGeneration": 1,
                "message": "Rolling Upgrade is done",
            },
        ],
        "readyReplicas": 2,
        "updatedReplicas": 2,
        "replicas": 2,
        "hpaPodSelector": (
            "leaderworkerset.sigs.k8s.io/name=chat-v2,leaderworkerset.sigs.k8s.io/worker-index=0"
        ),
    },
}


def changed(obj: dict[str, Any], **status: Any) -> dict[str, Any]:
    copied = copy.deepcopy(obj)
    copied["status"].update(status)
    return copied


# -- StatefulSet -----------------------------------------------------------------------------------
def test_a_statefulset_whose_update_is_complete_is_available() -> None:
    found = statefulset_availability("StatefulSet serving/chat-v2", STATEFULSET)
    assert found.available and found.message == "StatefulSet serving/chat-v2: 2 of 2 replicas Ready"


@pytest.mark.parametrize(
    ("status", "missing"),
    [
        ({"observedGeneration": 1}, "has not yet observed generation 2"),
        ({"updatedReplicas": 1}, "1 of 2 replicas run the current revision"),
        ({"updateRevision": "chat-v2-55f6d"}, "its update to revision chat-v2-55f6d is not complete"),
        ({"readyReplicas": 1}, "1 replica not Ready yet"),
        ({"availableReplicas": 0}, "2 replicas not Ready yet"),
        ({"replicas": 3}, "1 replica too many still there"),
    ],
)
def test_a_statefulset_is_not_available_until_every_replica_runs_the_update(
    status: dict[str, Any], missing: str
) -> None:
    found = statefulset_availability("StatefulSet serving/chat-v2", changed(STATEFULSET, **status))
    assert not found.available and missing in found.message


def test_a_statefulset_scaled_to_zero_serves_nothing() -> None:
    zero = copy.deepcopy(STATEFULSET)
    zero["spec"]["replicas"] = 0
    assert not statefulset_availability("s", zero).available


# -- LeaderWorkerSet -------------------------------------------------------------------------------
def test_a_leaderworkerset_with_every_group_ready_is_available() -> None:
    found = leaderworkerset_availability("LeaderWorkerSet serving/chat-v2", LEADERWORKERSET)
    assert found.available and found.message.endswith("2 of 2 groups Ready")


def condition(kind: str, status: str, generation: int = 1) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "R", "message": "m", "observedGeneration": generation}


@pytest.mark.parametrize(
    ("conditions", "ready", "missing"),
    [
        ([], 2, "it has no Available condition yet"),
        ([condition("Available", "False")], 2, "it is not Available (R: m)"),
        (
            [condition("Available", "True"), condition("UpdateInProgress", "True")],
            2,
            "it is UpdateInProgress",
        ),
        ([condition("Available", "True"), condition("Progressing", "True")], 2, "it is Progressing"),
        ([condition("Available", "True")], 1, "1 group not Ready yet"),
        ([condition("Available", "True", generation=0)], 2, "has not yet observed generation 1"),
    ],
)
def test_a_leaderworkerset_is_not_available_while_it_progresses_or_lacks_groups(
    conditions: list[dict[str, Any]], ready: int, missing: str
) -> None:
    found = leaderworkerset_availability(
        "l", changed(LEADERWORKERSET, conditions=conditions, readyReplicas=ready)
    )
    assert not found.available and missing in found.message


# -- any other kind, through its scale subresource --------------------------------------------------
SCALE = {"spec": {"replicas": 2}, "status": {"replicas": 2, "selector": "app=chat-v2"}}


def test_a_scaled_workload_is_available_when_every_selected_pod_is_ready() -> None:
    ready = [PoolPod("chat-v2-a", "chat-v2-", True), PoolPod("chat-v2-b", "chat-v2-", True)]
    assert scaled_availability("w", SCALE, ready).available
    one_unready = [ready[0], PoolPod("chat-v2-b", "chat-v2-", False)]
    assert "1 Pod not Ready yet" in scaled_availability("w", SCALE, one_unready).message
    behind = {**SCALE, "status": {"replicas": 1, "selector": "app=chat-v2"}}
    assert "1 of 2 replicas reported" in scaled_availability("w", behind, ready).message
    assert "selects no Pods" in scaled_availability("w", SCALE, []).message


class DiscoveredKube(SideWorkloads):
    """The API server's discovery and objects, in memory."""

    def __init__(self, resources: list[dict[str, Any]], scale: dict[str, Any], pods: list[dict[str, Any]]):
        super().__init__(client.ApiClient())
        self.resources, self.scale, self.pods = resources, scale, pods
        self.selectors: list[str] = []

    def _discover(self, api_version: str) -> list[dict[str, Any]]:
        return self.resources if api_version == "serving.example.com/v1" else []

    def _scale(self, namespace: str, ref: WorkloadObjectRef) -> dict[str, Any]:
        self._resource(ref)  # as the real one: refused before any read
        return self.scale

    def _pod_objects(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        self.selectors.append(label_selector)
        return self.pods


SERVERS = [
    {"name": "inferenceservers", "kind": "InferenceServer", "namespaced": True},
    {"name": "inferenceservers/scale", "kind": "Scale", "namespaced": True},
]
READY_POD = {
    "metadata": {"name": "chat-v2-a"},
    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
}
SERVER = WorkloadObjectRef(apiVersion="serving.example.com/v1", kind="InferenceServer", name="chat-v2")
FIELD = "spec.candidate.workload"


def test_another_kind_is_read_through_its_scale_subresource_and_its_selector() -> None:
    kube = DiscoveredKube(
        SERVERS, {"spec": {"replicas": 1}, "status": {"replicas": 1, "selector": "app=x"}}, [READY_POD]
    )
    found = kube.workload_availability("serving", SERVER, FIELD)
    assert found.available, found.message
    assert kube.selectors == ["app=x"]
    assert [pod.name for pod in kube.workload_serving_pods("serving", SERVER) or []] == ["chat-v2-a"]
    assert kube.workload_ready_replicas("serving", SERVER) == 1


def test_a_kind_without_a_scale_subresource_or_selector_is_refused_naming_the_field() -> None:
    no_scale = DiscoveredKube(SERVERS[:1], SCALE, [READY_POD])
    found = no_scale.workload_availability("serving", SERVER, FIELD)
    assert not found.available
    assert found.message.startswith(
        f"{FIELD}: InferenceServer (serving.example.com/v1) has no scale subresource"
    )
    unknown = WorkloadObjectRef(apiVersion="serving.example.com/v2", kind="InferenceServer", name="x")
    message = no_scale.workload_availability("serving", unknown, FIELD).message
    assert message.startswith(f"{FIELD}: the API server serves no kind InferenceServer")
    no_selector = DiscoveredKube(SERVERS, {"spec": {"replicas": 1}, "status": {"replicas": 1}}, [READY_POD])
    message = no_selector.workload_availability("serving", SERVER, FIELD).message
    assert message.startswith(f"{FIELD}: InferenceServer serving/chat-v2") and "status.selector" in message
