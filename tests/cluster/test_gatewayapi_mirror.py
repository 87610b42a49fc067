"""The Gateway API router's mirror against a real API server with the Gateway API CRDs (standard channel): the
RequestMirror filter to the candidate goes in with the weights, in one patch the CRD's rules accept,
and leaves again; every other filter stays; someone else's copy to the candidate is reported, not
overwritten."""

from __future__ import annotations

import copy

from kubernetes import client

from modelgate.core import LiveRoute, RouteProblem
from tests.cluster.test_gatewayapi_router import resource_version, rich_route, router
from tests.support.kube import create, get_route


def test_the_mirror_is_set_with_the_weights_and_removed_with_the_next_ones(
    api_client: client.ApiClient, namespace: str
) -> None:
    create(api_client, rich_route(namespace))
    before = get_route(api_client, namespace, "chat")["spec"]
    chat = router(api_client, namespace)

    assert chat.set_weights(0, 10) == LiveRoute(100, 0, mirror_percent=10)
    assert router(api_client, namespace).read() == LiveRoute(100, 0, mirror_percent=10)
    mirrored = get_route(api_client, namespace, "chat")["spec"]
    *kept, added = mirrored["rules"][0]["filters"]
    assert kept == before["rules"][0]["filters"]
    copied = added["requestMirror"]
    assert (added["type"], copied["percent"], copied["backendRef"]["name"]) == (
        "RequestMirror",
        10,
        "chat-v2",
    )
    mirrored["rules"][0]["filters"] = kept
    assert mirrored == before  # nothing else changed

    assert router(api_client, namespace).set_weights(20) == LiveRoute(80, 20, mirror_percent=0)
    after = get_route(api_client, namespace, "chat")["spec"]
    expected = copy.deepcopy(before)
    refs = expected["rules"][0]["backendRefs"]
    refs[0]["weight"], refs[2]["weight"] = 80, 20
    assert after == expected


def test_someone_elses_copy_to_the_candidate_is_reported_and_left_as_it_is(
    api_client: client.ApiClient, namespace: str
) -> None:
    route = rich_route(namespace)
    by_fraction = {
        "type": "RequestMirror",
        "requestMirror": {
            "backendRef": {"name": "chat-v2", "port": 8000},
            "fraction": {"numerator": 1, "denominator": 3},
        },
    }
    route["spec"]["rules"][0]["filters"].append(by_fraction)
    create(api_client, route)
    version = resource_version(api_client, namespace)

    chat = router(api_client, namespace)
    assert chat.read() == LiveRoute(100, 0, "OpenAPI-Generator", mirror_percent=0)
    problem = chat.set_weights(0, 10)

    assert isinstance(problem, RouteProblem)
    assert f"rule 0 of HTTPRoute {namespace}/chat: filters[1] already copies" in problem.message
    assert resource_version(api_client, namespace) == version
