"""The bed is a real control plane: schema validation, the Deployment controller, the scheduler,
kwok's fake kubelets, and custom resources all behave as they do in any cluster."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from testbed.manifests import http_route, model_deployment
from tests.support.kube import create, route_weights, set_route_weights, wait_deployment_available


def test_api_server_rejects_object_that_violates_crd_schema(
    api_client: client.ApiClient, namespace: str
) -> None:
    route = http_route("bad", namespace, {"chat-v1": 100})
    route["spec"]["rules"][0]["backendRefs"][0]["weight"] = -5
    with pytest.raises(ApiException) as rejected:
        create(api_client, route)
    assert rejected.value.status == 422
    assert "spec.rules[0].backendRefs[0].weight" in rejected.value.body


def test_deployment_becomes_available_with_ready_pods_on_fake_nodes(
    api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, model_deployment("x", namespace, replicas=2))
    wait_deployment_available(api_client, namespace, "x")
    pods = client.CoreV1Api(api_client).list_namespaced_pod(namespace).items
    assert len(pods) == 2
    for pod in pods:
        ready = {c.type: c.status for c in pod.status.conditions}["Ready"]
        assert ready == "True"
        node = client.CoreV1Api(api_client).read_node(pod.spec.node_name)
        assert node.metadata.annotations.get("kwok.x-k8s.io/node") == "fake"


def test_httproute_weights_can_be_patched(api_client: client.ApiClient, namespace: str) -> None:
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    set_route_weights(api_client, namespace, "chat", {"chat-v1": 80, "chat-v2": 20})
    assert route_weights(api_client, namespace, "chat") == {"chat-v1": 80, "chat-v2": 20}
