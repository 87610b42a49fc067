"""Issue 10's acceptance for the routers, one short operator-driven rollout each: promoted through a
GRPCRoute and through an Istio VirtualService, and a rollout over two HTTPRoutes moves both, with the
traffic driver sending chat requests by each route's weights and copies by its mirror (the doubles
speak HTTP; a GRPCRoute's split is followed with the same requests). Then another writer changes a
route of the finished rollout, and the operator, woken by its watch of that kind, sets it right.
Through a GRPCRoute and a VirtualService, `modelgate abort` returns the traffic to the incumbent; deleting
a rollout with onDelete ReturnTraffic returns every route it moves, for each router."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import Phase
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.manifests import Manifest, http_route, model_deployment, model_rollout, model_service
from testbed.operator_process import OperatorProcess
from testbed.route_kinds import (
    GRPC_ROUTE,
    HTTP_ROUTE,
    VIRTUAL_SERVICE,
    RouteKind,
    grpc_route,
    route_watcher,
    virtual_service,
)
from testbed.traffic_driver import BackgroundTraffic, TrafficDriver
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.kube import create
from tests.support.scenario import Rollouts, settled

START = {"chat-v1": 100, "chat-v2": 0}
STEPS = [{"mirror": {"percent": 50, "duration": "2s"}}, {"setWeight": 50}, {"pause": {"duration": "2s"}}]
# Where the candidate's weight sits in the routes these tests make.
CANDIDATE_WEIGHT_PATH = {
    "HTTPRoute": "/spec/rules/0/backendRefs/1/weight",
    "GRPCRoute": "/spec/rules/0/backendRefs/1/weight",
    "VirtualService": "/spec/http/0/route/1/weight",
}
GATEWAY = {"incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}


def routes_and_routing(
    case: str, namespace: str
) -> tuple[list[Manifest], dict[str, Any], list[tuple[RouteKind, str]]]:
    """The routes to create, spec.trafficRouting, and the (kind, name) of each route moved."""
    if case == "GRPCRoute":
        return (
            [grpc_route("chat", namespace, START)],
            {"gatewayAPI": {"grpcRoute": "chat", **GATEWAY}},
            [(GRPC_ROUTE, "chat")],
        )
    if case == "VirtualService":
        routing = {
            "istio": {
                "virtualService": "chat",
                "incumbentDestination": {"host": "chat-v1"},
                "candidateDestination": {"host": "chat-v2"},
            }
        }
        return [virtual_service("chat", namespace, START)], routing, [(VIRTUAL_SERVICE, "chat")]
    routes = [http_route("external", namespace, START), http_route("internal", namespace, START)]
    routing = {"gatewayAPI": {"routes": [{"httpRoute": "external"}, {"httpRoute": "internal"}], **GATEWAY}}
    return routes, routing, [(HTTP_ROUTE, "external"), (HTTP_ROUTE, "internal")]


def weights_of(
    objects: client.CustomObjectsApi, namespace: str, kind: RouteKind, name: str
) -> dict[str, int]:
    found = objects.get_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, name)
    return kind.weights(found, None if kind is VIRTUAL_SERVICE else 0)


@dataclass(frozen=True)
class Served:
    objects: client.CustomObjectsApi
    traffic: BackgroundTraffic
    rollouts: Rollouts
    moved: list[tuple[RouteKind, str]]
    routing: dict[str, Any]

    def apply(self, namespace: str, steps: list[dict[str, Any]], **spec: Any) -> None:
        """Applies rollout `chat` over this case's routes, with `spec` added to its spec."""
        manifest = model_rollout("chat", namespace, steps=steps)
        manifest["spec"].update(trafficRouting=self.routing, **spec)
        self.rollouts.apply(manifest)

    def hold_at_50(self, namespace: str, **spec: Any) -> None:
        self.apply(namespace, [{"setWeight": 50}, {"pause": {}}], **spec)
        self.rollouts.wait_for_status("the candidate live at 50", lambda s: s.live_weight == 50)


@pytest.fixture
def serve(
    request: pytest.FixtureRequest,
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
) -> Iterator[Served]:
    """The case named by the test's indirect parameter, served, with the operator running."""
    with served(request.param, local_bed, api_client, namespace) as serving:
        yield serving


@contextmanager
def served(
    case: str, local_bed: LocalCluster, api_client: client.ApiClient, namespace: str
) -> Iterator[Served]:
    """The two doubles behind the case's routes, and the traffic driver following the last route moved
    (with two, the one written last)."""
    fleet = ModelFleet(local_bed, api_client)
    for name in ("chat-v1", "chat-v2"):
        create(api_client, model_deployment(name, namespace, replicas=1))
        create(api_client, model_service(name, namespace))
    routes, routing, moved = routes_and_routing(case, namespace)
    for route in routes:
        create(api_client, route)
    objects = client.CustomObjectsApi(api_client)
    try:
        fleet.serve(namespace, "chat-v1")
        fleet.serve(namespace, "chat-v2")
        targets = {name: fleet.urls(name) for name in ("chat-v1", "chat-v2")}
        kind, route_name = moved[-1]
        traffic = BackgroundTraffic(
            TrafficDriver(targets, rps=10), route_watcher(objects, namespace, kind, route_name)
        )
        yield Served(objects, traffic, Rollouts(api_client, namespace), moved, routing)
    finally:
        fleet.stop()


@pytest.mark.parametrize("serve", ["GRPCRoute", "VirtualService", "two HTTPRoutes"], indirect=True)
def test_a_rollout_is_promoted_through_the_router_with_traffic_following_the_routes(
    serve: Served, namespace: str
) -> None:
    objects, traffic, rollouts, moved = serve.objects, serve.traffic, serve.rollouts, serve.moved
    with traffic:
        serve.apply(namespace, STEPS)
        rollouts.wait_for_status(
            "the candidate at 50 on the route", lambda s: s.current_weight == 50 and s.live_weight == 50
        )
        final = rollouts.wait_for_status("the rollout to be promoted", settled(Phase.SUCCEEDED), timeout=120)
        # The driver follows the route through a watch of its own, a moment after the route shows 100.
        wait_for(
            lambda: traffic.driver.current_weights() == {"chat-v1": 0, "chat-v2": 100},
            timeout=30,
            what="the traffic driver to follow the route to the candidate",
        )
        stats = traffic.stop()
    assert final.phase is Phase.SUCCEEDED, final.message
    assert stats.sent["chat-v1"] > 0 and stats.sent["chat-v2"] > 0, stats.as_dict()
    assert stats.mirrored["chat-v2"] > 0, stats.as_dict()  # the mirror step's copies
    assert [weights_of(objects, namespace, k, n) for k, n in moved] == [{"chat-v1": 0, "chat-v2": 100}] * len(
        moved
    )
    # A finished rollout sleeps 5 minutes; a watch of this kind of route is what wakes it.
    kind, route_name = moved[-1]
    objects.patch_namespaced_custom_object(
        kind.group,
        kind.version,
        namespace,
        kind.plural,
        route_name,
        [{"op": "replace", "path": CANDIDATE_WEIGHT_PATH[kind.kind], "value": 20}],
        _content_type="application/json-patch+json",
    )
    wait_for(
        lambda: weights_of(objects, namespace, kind, route_name)["chat-v2"] == 100,
        timeout=60,
        what=f"the operator to set {kind.kind} {route_name} right again",
    )


@pytest.mark.parametrize("serve", ["GRPCRoute", "VirtualService"], indirect=True)
def test_a_rollout_is_rolled_back_through_the_router_and_traffic_returns_to_the_incumbent(
    serve: Served, namespace: str, local_bed: LocalCluster
) -> None:
    with serve.traffic:
        serve.hold_at_50(namespace)
        aborted = modelgate(local_bed.kubeconfig, "abort", "chat", "-n", namespace)
        assert aborted.returncode == 0, aborted.stdout + aborted.stderr
        final = serve.rollouts.wait_for_status(
            "the rollback", lambda s: s.phase is Phase.ROLLED_BACK and s.live_weight == 0
        )
        wait_for(
            lambda: serve.traffic.driver.current_weights() == START,
            timeout=30,
            what="the traffic driver to follow the route back to the incumbent",
        )
        stats = serve.traffic.stop()
    assert final.rollback_reason is not None
    assert stats.sent["chat-v2"] > 0, stats.as_dict()  # it did serve its share before
    kind, route_name = serve.moved[-1]
    assert weights_of(serve.objects, namespace, kind, route_name) == START


@pytest.mark.parametrize("serve", ["GRPCRoute", "VirtualService", "two HTTPRoutes"], indirect=True)
def test_deleting_a_return_traffic_rollout_returns_every_route_to_the_incumbent(
    serve: Served, namespace: str
) -> None:
    serve.hold_at_50(namespace, rollback={"onDelete": "ReturnTraffic"})
    serve.objects.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "chat")
    wait_for(
        lambda: (
            [weights_of(serve.objects, namespace, k, n) for k, n in serve.moved] == [START] * len(serve.moved)
        ),
        timeout=30,
        what="every route of the deleted rollout back to the incumbent",
    )
    wait_for(
        lambda: (
            not serve.objects.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)[
                "items"
            ]
        ),
        timeout=30,
        what="the rollout to be gone once its finalizer is removed",
    )
