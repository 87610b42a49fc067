"""The contract every traffic router keeps, run against a real API server for each of them (HTTPRoute,
GRPCRoute, an Istio VirtualService, several HTTPRoutes, several VirtualServices, InferencePool backends
on an HTTPRoute, an InferenceModelRewrite's targets): set and verify, another writer named (so the
engine re-asserts once, then holds: tests/unit/test_engine_route_conflict.py), a missing route, rule
or backend reported naming the field with nothing written, a rollback to 0 on every target, and, where
the router mirrors, a mirror set with the weights and removed with the next ones (someone else's copy
to the candidate refused, not overwritten). Direct router calls, no operator: fast.

A new router is one more CASES row. Deletion (weights returned when a rollout is deleted) is checked
where that lives; a row's `targets` is what such a check reads back.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import TrafficRouting
from modelgate.core import LiveRoute, RouteProblem
from modelgate.kube import Kube
from modelgate.routers import SideKinds, TrafficRouter, router_for
from modelgate.routers.base import DEPLOYMENT_SIDES, AdapterSides
from testbed.inference_pools import model_rewrite, pool_http_route
from testbed.manifests import Manifest, http_route
from testbed.route_kinds import (
    GRPC_ROUTE,
    HTTP_ROUTE,
    MODEL_REWRITE,
    VIRTUAL_SERVICE,
    RouteKind,
    destination_key,
    grpc_route,
    virtual_service,
)
from tests.support.kube import create

OTHER_WRITER = "gitops-sync"
ROUTING = "spec.trafficRouting"


@dataclass(frozen=True)
class Case:
    objects: Callable[[str], list[Manifest]]  # the routes, incumbent 100 and candidate 0
    routing: dict[str, Any]  # spec.trafficRouting
    targets: tuple[tuple[RouteKind, str, Any], ...]  # (kind, name, rule) of every route it moves
    incumbent: str
    candidate: str
    # What breaks the routing: (dotted path in `routing`, value, the field the problem must name).
    broken: dict[str, tuple[str, Any, str]]
    kinds: SideKinds = DEPLOYMENT_SIDES
    mirrors: bool = True  # whether the router can copy requests to the candidate


GATEWAY = {"incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}
SERVICES = {"chat-v1": 100, "chat-v2": 0}
ISTIO = {
    "incumbentDestination": {"host": "chat-v1"},
    "candidateDestination": {"host": "chat", "subset": "v2"},
}
DESTINATIONS = {"chat-v1": 100, "chat/v2": 0}
MISSING_BACKEND = ("gatewayAPI.candidateBackend", "chat-v3", f"{ROUTING}.gatewayAPI.candidateBackend")
MISSING_DESTINATION = (
    "istio.candidateDestination",
    {"host": "chat-v3"},
    f"{ROUTING}.istio.candidateDestination",
)


def single_route(
    kind: RouteKind,
    build: Callable[[str, str, dict[str, int]], Manifest],
    backends: tuple[str, str] = ("chat-v1", "chat-v2"),
    kinds: SideKinds = DEPLOYMENT_SIDES,
) -> Case:
    field = "httpRoute" if kind is HTTP_ROUTE else "grpcRoute"
    incumbent, candidate = backends
    return Case(
        objects=lambda ns: [build("chat", ns, {incumbent: 100, candidate: 0})],
        routing={"gatewayAPI": {field: "chat", "incumbentBackend": incumbent, "candidateBackend": candidate}},
        targets=((kind, "chat", 0),),
        incumbent=incumbent,
        candidate=candidate,
        broken={
            "route": (f"gatewayAPI.{field}", "missing", f"{ROUTING}.gatewayAPI.{field}"),
            "rule": ("gatewayAPI.ruleIndex", 3, f"{ROUTING}.gatewayAPI.ruleIndex"),
            "backend": MISSING_BACKEND,
        },
        kinds=kinds,
    )


CASES: dict[str, Case] = {
    "HTTPRoute": single_route(HTTP_ROUTE, http_route),
    "GRPCRoute": single_route(GRPC_ROUTE, grpc_route),
    "InferencePools on an HTTPRoute": single_route(
        HTTP_ROUTE, pool_http_route, ("pool-v1", "pool-v2"), SideKinds("InferencePool", "InferencePool")
    ),
    "VirtualService": Case(
        objects=lambda ns: [virtual_service("chat", ns, DESTINATIONS)],
        routing={"istio": {"virtualService": "chat", **ISTIO}},
        targets=((VIRTUAL_SERVICE, "chat", None),),
        incumbent="chat-v1",
        candidate="chat/v2",
        broken={
            "route": ("istio.virtualService", "missing", f"{ROUTING}.istio.virtualService"),
            "rule": ("istio.routes", ["no-such-route"], f"{ROUTING}.istio.routes"),
            "backend": MISSING_DESTINATION,
        },
    ),
    "two HTTPRoutes": Case(
        objects=lambda ns: [http_route("external", ns, SERVICES), http_route("internal", ns, SERVICES)],
        routing={"gatewayAPI": {"routes": [{"httpRoute": "external"}, {"httpRoute": "internal"}], **GATEWAY}},
        targets=((HTTP_ROUTE, "external", 0), (HTTP_ROUTE, "internal", 0)),
        incumbent="chat-v1",
        candidate="chat-v2",
        broken={
            "route": (
                "gatewayAPI.routes.1.httpRoute",
                "missing",
                f"{ROUTING}.gatewayAPI.routes[1].httpRoute",
            ),
            "rule": ("gatewayAPI.routes.1.ruleIndex", 3, f"{ROUTING}.gatewayAPI.routes[1].ruleIndex"),
            "backend": MISSING_BACKEND,
        },
    ),
    "two VirtualServices": Case(
        objects=lambda ns: [virtual_service("a", ns, DESTINATIONS), virtual_service("b", ns, DESTINATIONS)],
        routing={
            "istio": {"virtualServices": [{"name": "a"}, {"name": "b", "routes": ["primary"]}], **ISTIO}
        },
        targets=((VIRTUAL_SERVICE, "a", None), (VIRTUAL_SERVICE, "b", "primary")),
        incumbent="chat-v1",
        candidate="chat/v2",
        broken={
            "route": ("istio.virtualServices.1.name", "missing", f"{ROUTING}.istio.virtualServices[1].name"),
            "rule": (
                "istio.virtualServices.1.routes",
                ["nope"],
                f"{ROUTING}.istio.virtualServices[1].routes",
            ),
            "backend": MISSING_DESTINATION,
        },
    ),
    # Its targets are the sides' adapters, not named in the routing: a missing one is a unit test's
    # (test_model_rewrite_router.py), as is the refusal to mirror.
    "InferenceModelRewrite": Case(
        objects=lambda ns: [model_rewrite("chat", ns, "base", "chat", {"lora-v1": 100})],
        routing={"inferenceModelRewrite": {"name": "chat"}},
        targets=((MODEL_REWRITE, "chat", 0),),
        incumbent="lora-v1",
        candidate="lora-v2",
        broken={
            "route": ("inferenceModelRewrite.name", "missing", f"{ROUTING}.inferenceModelRewrite.name"),
            "rule": ("inferenceModelRewrite.ruleIndex", 3, f"{ROUTING}.inferenceModelRewrite.ruleIndex"),
        },
        kinds=SideKinds("InferencePool", "InferencePool", AdapterSides("base", "lora-v1", "lora-v2")),
        mirrors=False,
    ),
}
PROBLEMS = {"route": "RouteNotFound", "rule": "RuleNotFound", "backend": "BackendNotFound"}
Router = Callable[..., TrafficRouter]


@pytest.fixture(params=list(CASES))
def case(request: pytest.FixtureRequest, api_client: client.ApiClient, namespace: str) -> Case:
    chosen = CASES[request.param]
    for manifest in chosen.objects(namespace):
        create(api_client, manifest)
    return chosen


@pytest.fixture
def router(api_client: client.ApiClient, namespace: str, case: Case) -> Router:
    """Makes a fresh router, as each tick does (no cache: every read goes to the API server), for the
    case's routing or another."""

    def make(routing: dict[str, Any] | None = None) -> TrafficRouter:
        config = TrafficRouting.model_validate(case.routing if routing is None else routing)
        return router_for(config, Kube(api_client), namespace, case.kinds)

    return make


def _object(api_client: client.ApiClient, namespace: str, kind: RouteKind, name: str) -> dict[str, Any]:
    found: dict[str, Any] = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
        kind.group, kind.version, namespace, kind.plural, name
    )
    return found


def stored(api_client: client.ApiClient, namespace: str, case: Case) -> list[tuple[int, int]]:
    """(incumbent, candidate) weights of every target, as stored."""
    weights = [
        kind.weights(_object(api_client, namespace, kind, name), rule) for kind, name, rule in case.targets
    ]
    return [(w.get(case.incumbent, 0), w.get(case.candidate, 0)) for w in weights]


def copies(api_client: client.ApiClient, namespace: str, case: Case) -> list[float]:
    """The share of requests every target copies to the candidate, as stored."""
    return [
        kind.mirrors(_object(api_client, namespace, kind, name), rule).get(case.candidate, 0.0)
        for kind, name, rule in case.targets
    ]


def overwrite(
    api_client: client.ApiClient, namespace: str, target: tuple[RouteKind, str, Any], weights: dict[str, int]
) -> None:
    """Another writer (a GitOps sync, say) rewrites one target's weights with a full update."""
    kind, name, _ = target
    obj = _object(api_client, namespace, kind, name)
    if kind is VIRTUAL_SERVICE:
        for entry in obj["spec"]["http"][0]["route"]:
            entry["weight"] = weights[destination_key(entry["destination"])]
    elif kind is MODEL_REWRITE:
        obj["spec"]["rules"][0]["targets"] = [
            {"modelRewrite": t, "weight": w} for t, w in weights.items() if w
        ]
    else:
        for ref in obj["spec"]["rules"][0]["backendRefs"]:
            ref["weight"] = weights[ref["name"]]
    client.CustomObjectsApi(api_client).replace_namespaced_custom_object(
        kind.group, kind.version, namespace, kind.plural, name, obj, field_manager=OTHER_WRITER
    )


def test_set_writes_every_target_and_returns_what_is_stored(
    case: Case, router: Router, api_client: client.ApiClient, namespace: str
) -> None:
    first = router().read()
    assert isinstance(first, LiveRoute)
    assert (first.incumbent_weight, first.candidate_weight, first.differing) == (100, 0, None)
    assert router().set_weights(30) == LiveRoute(70, 30)
    assert stored(api_client, namespace, case) == [(70, 30)] * len(case.targets)
    assert router().read() == LiveRoute(70, 30)


def test_another_writer_is_named_and_a_write_sets_it_right(
    case: Case, router: Router, api_client: client.ApiClient, namespace: str
) -> None:
    router().set_weights(30)
    overwrite(api_client, namespace, case.targets[-1], {case.incumbent: 50, case.candidate: 50})
    seen = router().read()
    assert isinstance(seen, LiveRoute)
    # The overwritten weight and its writer: what the engine needs to write back once, then hold.
    assert (seen.candidate_weight, seen.other_writer) == (50, OTHER_WRITER)
    assert (seen.differing is not None) == (len(case.targets) > 1)
    assert router().set_weights(30) == LiveRoute(70, 30)
    assert stored(api_client, namespace, case) == [(70, 30)] * len(case.targets)


@pytest.mark.parametrize("what", list(PROBLEMS))
def test_a_missing_route_rule_or_backend_is_reported_naming_the_field(
    case: Case, router: Router, what: str, api_client: client.ApiClient, namespace: str
) -> None:
    if what not in case.broken:
        pytest.skip(f"the routing of {case.targets[0][0].kind} names no {what}")
    path, value, field = case.broken[what]
    routing = copy.deepcopy(case.routing)
    *parents, last = path.split(".")
    node: Any = routing
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    node[last] = value
    problem = router(routing).read()
    assert isinstance(problem, RouteProblem), problem
    assert problem.reason == PROBLEMS[what]
    assert field in problem.message, problem.message
    if len(case.targets) == 1:  # a group writes what it can reach; the engine never asks it to then
        assert isinstance(router(routing).set_weights(50), RouteProblem)
    assert stored(api_client, namespace, case) == [(100, 0)] * len(case.targets)


def test_a_rollback_sets_every_target_to_0(
    case: Case, router: Router, api_client: client.ApiClient, namespace: str
) -> None:
    router().set_weights(40)
    assert router().set_weights(0) == LiveRoute(100, 0)
    assert stored(api_client, namespace, case) == [(100, 0)] * len(case.targets)


def test_a_mirror_goes_in_with_the_weights_and_leaves_with_the_next_ones(
    case: Case, router: Router, api_client: client.ApiClient, namespace: str
) -> None:
    if not case.mirrors:
        pytest.skip("this router cannot mirror")
    assert router().set_weights(0, mirror_percent=10) == LiveRoute(100, 0, mirror_percent=10)
    assert copies(api_client, namespace, case) == [10.0] * len(case.targets)
    assert router().read() == LiveRoute(100, 0, mirror_percent=10)
    assert router().set_weights(20) == LiveRoute(80, 20)
    assert copies(api_client, namespace, case) == [0.0] * len(case.targets)
    assert stored(api_client, namespace, case) == [(80, 20)] * len(case.targets)


def test_someone_elses_copy_to_the_candidate_is_reported_not_overwritten(
    case: Case, router: Router, api_client: client.ApiClient, namespace: str
) -> None:
    if not case.mirrors:
        pytest.skip("this router cannot mirror")
    _, name, _ = case.targets[-1]
    theirs = copy_to_candidate(api_client, namespace, case)
    problem = router().set_weights(0, mirror_percent=10)
    assert isinstance(problem, RouteProblem) and problem.reason == "WeightNotApplied", problem
    assert name in problem.message and "not written by modelgate" in problem.message
    assert copies(api_client, namespace, case)[-1] == theirs  # theirs alone, as they left it
    live = router().read()  # theirs is not taken for the operator's mirror
    assert isinstance(live, LiveRoute) and (live.candidate_weight, live.mirror_percent) == (0, 0)


def copy_to_candidate(api_client: client.ApiClient, namespace: str, case: Case) -> float:
    """Another writer copies requests to the candidate on the last target, in a form the operator does
    not write (a fraction, or an entry of Istio's `mirrors`); returns the share it copies."""
    kind, name, _ = case.targets[-1]
    obj = _object(api_client, namespace, kind, name)
    if kind is VIRTUAL_SERVICE:
        candidate = obj["spec"]["http"][0]["route"][1]["destination"]
        obj["spec"]["http"][0]["mirrors"] = [{"destination": candidate}]
    else:
        rule = obj["spec"]["rules"][0]
        candidate = {key: value for key, value in rule["backendRefs"][1].items() if key != "weight"}
        fraction = {"numerator": 1, "denominator": 4}
        rule["filters"] = [
            {"type": "RequestMirror", "requestMirror": {"backendRef": candidate, "fraction": fraction}}
        ]
    client.CustomObjectsApi(api_client).replace_namespaced_custom_object(
        kind.group, kind.version, namespace, kind.plural, name, obj, field_manager=OTHER_WRITER
    )
    return copies(api_client, namespace, case)[-1]
