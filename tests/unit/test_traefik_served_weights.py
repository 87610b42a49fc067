"""Reading the weights Traefik serves for an HTTPRoute from its API's list of services."""

from __future__ import annotations

from typing import Any

from testbed.traefik_gateway import route_weights_served

ROUTER = "httproute-ns-chat-gw-ns-inference-ep-web-0-1c0a"


def weighted(name: str, children: dict[str, int]) -> dict[str, Any]:
    services = [{"name": child, "weight": weight} for child, weight in children.items()]
    return {"name": name, "provider": "kubernetesgateway", "weighted": {"services": services}}


def test_each_weighted_service_of_the_route_is_read_by_backend_and_others_are_left_out() -> None:
    services = [
        weighted(
            f"{ROUTER}-wrr@kubernetesgateway",
            {f"{ROUTER}-svc-ns-chat-v1-0": 80, f"{ROUTER}-svc-ns-chat-v2-1": 20},
        ),
        {"name": f"{ROUTER}-svc-ns-chat-v1-0@kubernetesgateway", "loadBalancer": {"servers": []}},
        weighted("httproute-ns-other-gw-ns-inference-ep-web-0-2b1f-wrr@kubernetesgateway", {"x": 1}),
        weighted("httproute-other-chat-gw-other-inference-ep-web-0-3a2e-wrr@kubernetesgateway", {"y": 1}),
    ]
    assert route_weights_served(services, "ns", "chat") == [{"chat-v1": 80, "chat-v2": 20}]


def test_a_route_traefik_does_not_serve_yet_has_no_weights() -> None:
    assert route_weights_served([{"name": "noop@internal", "provider": "internal"}], "ns", "chat") == []
