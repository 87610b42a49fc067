"""The Gateway API router against a real API server with the Gateway API CRDs: it writes exactly the two
weights, reports unusable routes without writing, and redoes a write that raced with another writer."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import GatewayAPIRouting
from modelgate.core import LiveRoute, RouteProblem
from modelgate.kube import Conflict, Kube, KubeError
from modelgate.routers.gatewayapi import (
    GATEWAY_GROUP,
    GATEWAY_VERSION,
    HTTPROUTES,
    GatewayAPIRouter,
    route_targets,
)
from modelgate.routers.patched import MAX_WRITE_ATTEMPTS
from testbed.manifests import http_route
from tests.support.kube import create, get_route, route_weights

ROUTING = GatewayAPIRouting(http_route="chat", incumbent_backend="chat-v1", candidate_backend="chat-v2")
(TARGET,) = route_targets(ROUTING)
# The field manager the API server records for this test's own writes (the client's user agent).
TEST_CLIENT = "OpenAPI-Generator"


def router(api_client: client.ApiClient, namespace: str, **routing: Any) -> GatewayAPIRouter:
    (target,) = route_targets(ROUTING.model_copy(update=routing))
    return GatewayAPIRouter(Kube(api_client), namespace, target)


def rich_route(namespace: str) -> dict[str, Any]:
    """A route with a bit of everything the router must leave alone."""
    return {
        "apiVersion": f"{GATEWAY_GROUP}/{GATEWAY_VERSION}",
        "kind": "HTTPRoute",
        "metadata": {
            "name": "chat",
            "namespace": namespace,
            "labels": {"team": "llm"},
            "annotations": {"owner": "platform", "example.com/note": "hands off"},
        },
        "spec": {
            "parentRefs": [{"name": "inference", "sectionName": "http"}, {"name": "internal"}],
            "hostnames": ["chat.example.com"],
            "rules": [
                {
                    "matches": [
                        {
                            "path": {"type": "PathPrefix", "value": "/v1"},
                            "headers": [{"name": "x-tenant", "value": "a"}],
                        }
                    ],
                    "filters": [
                        {
                            "type": "RequestHeaderModifier",
                            "requestHeaderModifier": {"set": [{"name": "x-route", "value": "canary"}]},
                        }
                    ],
                    "backendRefs": [
                        {
                            "name": "chat-v1",
                            "port": 8000,
                            "weight": 100,
                            "filters": [
                                {
                                    "type": "RequestHeaderModifier",
                                    "requestHeaderModifier": {"add": [{"name": "x-model", "value": "v1"}]},
                                }
                            ],
                        },
                        {"name": "chat-shadow", "port": 8000, "weight": 0},
                        {"name": "chat-v2", "port": 8000, "weight": 0},
                    ],
                },
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/admin"}}],
                    "backendRefs": [{"name": "chat-v1", "port": 8000, "weight": 5}],
                },
            ],
        },
    }


def resource_version(api_client: client.ApiClient, namespace: str) -> str:
    return str(get_route(api_client, namespace, "chat")["metadata"]["resourceVersion"])


def test_set_weights_writes_both_weights_and_reads_them_back(
    api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    chat = router(api_client, namespace)
    assert chat.read() == LiveRoute(incumbent_weight=100, candidate_weight=0, other_writer=TEST_CLIENT)

    assert chat.set_weights(30) == LiveRoute(incumbent_weight=70, candidate_weight=30)

    assert chat.read() == LiveRoute(incumbent_weight=70, candidate_weight=30)
    assert route_weights(api_client, namespace, "chat") == {"chat-v1": 70, "chat-v2": 30}


def test_set_weights_changes_nothing_but_the_two_weights(
    api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, rich_route(namespace))
    before = get_route(api_client, namespace, "chat")

    assert router(api_client, namespace).set_weights(25) == LiveRoute(
        incumbent_weight=75, candidate_weight=25
    )

    after = get_route(api_client, namespace, "chat")
    expected = copy.deepcopy(before)
    refs = expected["spec"]["rules"][0]["backendRefs"]
    refs[0]["weight"], refs[2]["weight"] = 75, 25
    assert json.dumps(after["spec"]) == json.dumps(expected["spec"])
    volatile = {"resourceVersion", "generation", "managedFields"}
    assert {k: v for k, v in after["metadata"].items() if k not in volatile} == {
        k: v for k, v in before["metadata"].items() if k not in volatile
    }


def test_route_with_duplicate_backend_is_accepted_by_the_api_server(
    api_client: client.ApiClient, namespace: str
) -> None:
    """Guards the BackendAmbiguous case below: the CRD does not forbid a name twice in a rule."""
    create(api_client, http_route("chat", namespace, {"chat-v1": 50, "chat-v2": 50}))
    _add_backend(api_client, namespace, "chat-v1")
    names = [
        ref["name"] for ref in get_route(api_client, namespace, "chat")["spec"]["rules"][0]["backendRefs"]
    ]
    assert names == ["chat-v1", "chat-v2", "chat-v1"]


PROBLEMS = {
    "missing route": (
        {"http_route": "nope"},
        "RouteNotFound",
        "HTTPRoute {ns}/nope not found (spec.trafficRouting.gatewayAPI.httpRoute)",
    ),
    "missing rule": (
        {"rule_index": 3},
        "RuleNotFound",
        "HTTPRoute {ns}/chat has 1 rule; spec.trafficRouting.gatewayAPI.ruleIndex is 3",
    ),
    "missing backend": (
        {"candidate_backend": "chat-v3"},
        "BackendNotFound",
        "rule 0 of HTTPRoute {ns}/chat has no Service backendRef named chat-v3"
        " (spec.trafficRouting.gatewayAPI.candidateBackend); it has: chat-v1, chat-v2",
    ),
    "duplicate backend": (
        {"duplicate": "chat-v2"},
        "BackendAmbiguous",
        "rule 0 of HTTPRoute {ns}/chat has 2 backendRefs named chat-v2"
        " (spec.trafficRouting.gatewayAPI.candidateBackend): backendRefs[1], backendRefs[2];"
        " keep one so that its weight is unambiguous",
    ),
}


@pytest.mark.parametrize(("routing", "reason", "message"), PROBLEMS.values(), ids=PROBLEMS.keys())
def test_unusable_route_is_a_route_problem_and_nothing_is_written(
    api_client: client.ApiClient, namespace: str, routing: dict[str, Any], reason: str, message: str
) -> None:
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    routing = dict(routing)
    duplicate = routing.pop("duplicate", None)
    if duplicate:
        _add_backend(api_client, namespace, duplicate)
    version = resource_version(api_client, namespace)
    chat = router(api_client, namespace, **routing)
    expected = RouteProblem(reason, message.format(ns=namespace))

    assert chat.read() == expected
    assert chat.set_weights(50) == expected
    assert resource_version(api_client, namespace) == version


def test_read_names_the_last_other_writer_of_the_weights(
    api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    router(api_client, namespace).set_weights(20)
    assert router(api_client, namespace).read() == LiveRoute(80, 20)  # the operator wrote last

    weights = [
        {"op": "replace", "path": f"/spec/rules/0/backendRefs/{i}/weight", "value": 50} for i in (0, 1)
    ]
    client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        "gateway.networking.k8s.io",
        "v1",
        namespace,
        "httproutes",
        "chat",
        weights,
        field_manager="argocd-controller",
        _content_type="application/json-patch+json",
    )
    assert router(api_client, namespace).read() == LiveRoute(50, 50, other_writer="argocd-controller")

    router(api_client, namespace).set_weights(20)
    assert router(api_client, namespace).read() == LiveRoute(80, 20)


def test_absent_weight_reads_as_one(api_client: client.ApiClient, namespace: str) -> None:
    route = http_route("chat", namespace, {"chat-v1": 0, "chat-v2": 0})
    del route["spec"]["rules"][0]["backendRefs"][0]["weight"]
    create(api_client, route)
    chat = router(api_client, namespace)

    # The Gateway API CRD (v1.6) defaults the weight to 1 on the server; a route stored without one
    # (an older CRD) reads as 1 too: tests/unit/test_gatewayapi_parsing.py.
    assert get_route(api_client, namespace, "chat")["spec"]["rules"][0]["backendRefs"][0]["weight"] == 1
    assert chat.read() == LiveRoute(incumbent_weight=1, candidate_weight=0, other_writer=TEST_CLIENT)
    assert chat.set_weights(10) == LiveRoute(incumbent_weight=90, candidate_weight=10)


class InterferingKube(Kube):
    """Lets another writer change the route right after each of the router's first `times` reads,
    i.e. between its read and its patch, and records how each patch ended."""

    def __init__(self, api_client: client.ApiClient, interfere: Callable[[], None], times: int) -> None:
        super().__init__(api_client)
        self.interfere = interfere
        self.interferences_left = times
        self.patch_outcomes: list[str] = []

    def get_custom(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        route = super().get_custom(*args, **kwargs)
        if self.interferences_left > 0:
            self.interferences_left -= 1
            self.interfere()
        return route

    def json_patch_custom(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        try:
            written = super().json_patch_custom(*args, **kwargs)
        except KubeError as error:
            self.patch_outcomes.append(type(error).__name__)
            raise
        self.patch_outcomes.append("applied")
        return written


def other_writer(api_client: client.ApiClient, namespace: str) -> Callable[[], None]:
    """Each call changes a match, an annotation and the candidate's weight, as a person might."""
    counter = itertools.count(1)

    def write() -> None:
        n = next(counter)
        operations: list[dict[str, Any]] = [
            {"op": "add", "path": "/metadata/annotations", "value": {"other-writer": str(n)}},
            {"op": "replace", "path": "/spec/rules/0/matches/0/path/value", "value": f"/v{n + 1}"},
            {"op": "replace", "path": "/spec/rules/0/backendRefs/1/weight", "value": 50 + n},
        ]
        client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
            GATEWAY_GROUP,
            GATEWAY_VERSION,
            namespace,
            HTTPROUTES,
            "chat",
            operations,
            _content_type="application/json-patch+json",
        )

    return write


def test_write_that_raced_with_another_writer_is_redone_and_keeps_their_change(
    api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    kube = InterferingKube(api_client, other_writer(api_client, namespace), times=1)

    assert GatewayAPIRouter(kube, namespace, TARGET).set_weights(20) == LiveRoute(
        incumbent_weight=80, candidate_weight=20
    )

    # The first patch tested a resourceVersion that was no longer current; the second applied.
    assert kube.patch_outcomes == ["PatchNotApplied", "applied"]
    route = get_route(api_client, namespace, "chat")
    assert route_weights(api_client, namespace, "chat") == {"chat-v1": 80, "chat-v2": 20}
    assert route["metadata"]["annotations"] == {"other-writer": "1"}
    assert route["spec"]["rules"][0]["matches"][0]["path"]["value"] == "/v2"


def test_write_gives_up_after_bounded_attempts_when_the_route_keeps_changing(
    api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    kube = InterferingKube(api_client, other_writer(api_client, namespace), times=MAX_WRITE_ATTEMPTS)

    with pytest.raises(Conflict, match=f"changed under each of {MAX_WRITE_ATTEMPTS} attempts"):
        GatewayAPIRouter(kube, namespace, TARGET).set_weights(20)

    assert kube.patch_outcomes == ["PatchNotApplied"] * MAX_WRITE_ATTEMPTS
    assert route_weights(api_client, namespace, "chat") == {
        "chat-v1": 100,
        "chat-v2": 50 + MAX_WRITE_ATTEMPTS,
    }


def _add_backend(api_client: client.ApiClient, namespace: str, name: str) -> None:
    """Appends a backendRef to rule 0 of route `chat`."""
    backend = {"name": name, "port": 8000, "weight": 0}
    operations: list[dict[str, Any]] = [
        {"op": "add", "path": "/spec/rules/0/backendRefs/-", "value": backend}
    ]
    client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        GATEWAY_GROUP,
        GATEWAY_VERSION,
        namespace,
        HTTPROUTES,
        "chat",
        operations,
        _content_type="application/json-patch+json",
    )


class BrokenPatchKube(Kube):
    """Adds an op that can never apply to every JSON patch, and counts the patches."""

    patches = 0

    def json_patch_custom(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        operations: list[dict[str, Any]],
        field_manager: str = "modelgate",
    ) -> dict[str, Any]:
        self.patches += 1
        never = {"op": "test", "path": "/spec/hostnames", "value": ["never.example.com"]}
        return super().json_patch_custom(
            group, version, namespace, plural, name, [*operations, never], field_manager
        )


def test_patch_rejected_on_an_unchanged_route_is_an_error_not_a_race(
    api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    kube = BrokenPatchKube(api_client)

    with pytest.raises(KubeError, match="could not apply the weight patch to an unchanged route") as raised:
        GatewayAPIRouter(kube, namespace, TARGET).set_weights(20)

    assert not isinstance(raised.value, Conflict)
    assert kube.patches == 1  # re-read once to tell a race from a bad patch, not retried
    assert route_weights(api_client, namespace, "chat") == {"chat-v1": 100, "chat-v2": 0}
