"""Small helpers over the kubernetes client for tests: create from dicts, read routes, wait."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client, utils

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutStatus
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION, Manifest, http_route, model_deployment
from testbed.traffic_driver import parse_backend_weights
from testbed.waiting import WaitTimeout, wait_for

CUSTOM_PLURALS = {
    "Gateway": "gateways",
    "HTTPRoute": "httproutes",
    "GRPCRoute": "grpcroutes",
    "VirtualService": "virtualservices",
    "InferencePool": "inferencepools",
    "InferenceModelRewrite": "inferencemodelrewrites",
    "LeaderWorkerSet": "leaderworkersets",
    "ModelRollout": "modelrollouts",
    "ModelEvaluation": "modelevaluations",
}
# How long kube-controller-manager may take to give a new namespace its `default` ServiceAccount:
# after an API-server restart its informers back off from the restarted server's early refusals.
SERVICE_ACCOUNT_TIMEOUT = 120


@contextmanager
def scratch_namespace(api_client: client.ApiClient) -> Iterator[str]:
    """A namespace of its own, deleted at the end; yielded once it has its `default` ServiceAccount,
    without which no Pod can be created in it (a Deployment's ReplicaSet keeps failing and backing
    off until it appears)."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core = client.CoreV1Api(api_client)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    try:
        wait_for(
            lambda: core.list_namespaced_service_account(name, field_selector="metadata.name=default").items,
            timeout=SERVICE_ACCOUNT_TIMEOUT,
            what=f"the default ServiceAccount of namespace {name}",
        )
        yield name
    finally:
        core.delete_namespace(name)


def create(api_client: client.ApiClient, manifest: Manifest) -> None:
    plural = CUSTOM_PLURALS.get(manifest["kind"])
    if plural is None:
        utils.create_from_dict(api_client, manifest)
        return
    group, version = manifest["apiVersion"].split("/")
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        group, version, manifest["metadata"]["namespace"], plural, manifest
    )


def get_route(api_client: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    route: dict[str, Any] = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
        GATEWAY_GROUP, GATEWAY_VERSION, namespace, "httproutes", name
    )
    return route


def route_weights(api_client: client.ApiClient, namespace: str, name: str, rule: int = 0) -> dict[str, int]:
    return parse_backend_weights(get_route(api_client, namespace, name), rule)


def wait_for_route_weights(
    api_client: client.ApiClient, namespace: str, name: str, expected: dict[str, int], timeout: float = 10
) -> None:
    """The operator writes a step's status before its weight, so a phase can show before the route."""
    try:
        wait_for(
            lambda: route_weights(api_client, namespace, name) == expected,
            timeout=timeout,
            what=f"route {namespace}/{name} to carry {expected}",
        )
    except WaitTimeout as timed_out:
        carried = route_weights(api_client, namespace, name)
        raise WaitTimeout(f"{timed_out}; it carries {carried}") from timed_out


def set_route_weights(
    api_client: client.ApiClient, namespace: str, name: str, weights: dict[str, int]
) -> None:
    """Rewrites the first rule's weights the way a person with kubectl edit would (a full update)."""
    objects = client.CustomObjectsApi(api_client)
    route = get_route(api_client, namespace, name)
    for ref in route["spec"]["rules"][0]["backendRefs"]:
        ref["weight"] = weights[ref["name"]]
    objects.replace_namespaced_custom_object(
        GATEWAY_GROUP, GATEWAY_VERSION, namespace, "httproutes", name, route
    )


def wait_deployment_available(
    api_client: client.ApiClient, namespace: str, name: str, timeout: float = 60
) -> None:
    apps = client.AppsV1Api(api_client)

    def available() -> bool:
        status = apps.read_namespaced_deployment_status(name, namespace).status
        conditions = {c.type: c.status for c in status.conditions or []}
        return conditions.get("Available") == "True" and status.ready_replicas == status.replicas

    wait_for(available, timeout=timeout, what=f"deployment {namespace}/{name} to become Available")


def create_model_routes(api_client: client.ApiClient, namespace: str, routes: list[str]) -> None:
    """chat-v1 (the incumbent) and chat-v2 (the candidate), one replica each and no traffic, and an
    HTTPRoute between them for each name in `routes`: enough for rollouts without analysis."""
    for name in ("chat-v1", "chat-v2"):
        create(api_client, model_deployment(name, namespace, replicas=1))
    for route in routes:
        create(api_client, http_route(route, namespace, {"chat-v1": 100, "chat-v2": 0}))


def rollout_status(api_client: client.ApiClient, namespace: str, name: str) -> ModelRolloutStatus:
    body = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, name
    )
    return ModelRolloutStatus.model_validate(body.get("status") or {})
