"""The kinds of route the traffic driver follows, each with how its weights and mirrors are read:
HTTPRoute and GRPCRoute (the same backendRefs and RequestMirror filters; the doubles speak HTTP, so a
GRPCRoute's split is followed with the same chat requests) and Istio VirtualServices (a destination's
weights, and the http route's mirrors, keyed by its host, or `host/subset` when it names a subset)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubernetes.client import CustomObjectsApi

from testbed.endpoint_picker import REWRITE_RESOURCE, rule_targets
from testbed.manifests import http_route
from testbed.route_mirrors import FULL_COPY, Mirrors, parse_mirrors
from testbed.traffic_driver import (
    GATEWAY_GROUP,
    GATEWAY_VERSION,
    HTTPRouteWatcher,
    RouteError,
    Weights,
    parse_backend_weights,
)

ISTIO_GROUP = "networking.istio.io"
ISTIO_VERSION = "v1"


@dataclass(frozen=True)
class RouteKind:
    kind: str
    group: str
    version: str
    plural: str
    # The weights, and the mirrors, of the rule named by `rule` (an index for Gateway API, an http
    # route's name, or None for the only one, for Istio).
    weights: Callable[[Mapping[str, Any], Any], Weights]
    mirrors: Callable[[Mapping[str, Any], Any], Mirrors]


def destination_key(destination: Mapping[str, Any]) -> str:
    subset = destination.get("subset")
    return str(destination.get("host")) + (f"/{subset}" if subset else "")


def virtual_service_weights(service: Mapping[str, Any], http_route: str | None = None) -> Weights:
    """The destinations' weights of the named http route (None: the only one); Istio gives a lone
    destination all traffic and one without a weight among several none."""
    name = service.get("metadata", {}).get("name", "<unnamed>")
    destinations = _http_route(service, http_route).get("route") or []
    weights: Weights = {}
    for entry in destinations:
        key = destination_key(entry.get("destination") or {})
        weight = entry.get("weight", 100 if len(destinations) == 1 else 0)
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
            raise RouteError(f"VirtualService {name}: destination {key} has invalid weight {weight!r}")
        weights[key] = weights.get(key, 0) + weight
    return weights


def virtual_service_mirrors(service: Mapping[str, Any], http_route: str | None = None) -> Mirrors:
    """The shares the named http route copies to each destination: its `mirror` (by
    mirrorPercentage, or the deprecated mirrorPercent; all without either) and each of `mirrors` (by
    its percentage); several to one destination add up, at most 100%."""
    http = _http_route(service, http_route)
    copies = [(http.get("mirror"), http.get("mirrorPercentage"), http.get("mirrorPercent"))]
    copies += [
        (entry.get("destination"), entry.get("percentage"), None) for entry in http.get("mirrors") or []
    ]
    mirrors: Mirrors = {}
    for destination, percentage, deprecated in copies:
        if not destination:
            continue
        share = (percentage or {}).get("value", FULL_COPY if deprecated is None else deprecated)
        key = destination_key(destination)
        mirrors[key] = min(FULL_COPY, mirrors.get(key, 0.0) + float(share))
    return mirrors


def _http_route(service: Mapping[str, Any], http_route: str | None) -> Mapping[str, Any]:
    name = service.get("metadata", {}).get("name", "<unnamed>")
    http: list[Mapping[str, Any]] = service.get("spec", {}).get("http") or []
    chosen = [r for r in http if http_route is None or r.get("name") == http_route]
    if len(chosen) != 1:
        raise RouteError(f"VirtualService {name} has {len(chosen)} http routes matching {http_route!r}")
    return chosen[0]


HTTP_ROUTE = RouteKind(
    "HTTPRoute", GATEWAY_GROUP, GATEWAY_VERSION, "httproutes", parse_backend_weights, parse_mirrors
)
GRPC_ROUTE = RouteKind(
    "GRPCRoute", GATEWAY_GROUP, GATEWAY_VERSION, "grpcroutes", parse_backend_weights, parse_mirrors
)
VIRTUAL_SERVICE = RouteKind(
    "VirtualService",
    ISTIO_GROUP,
    ISTIO_VERSION,
    "virtualservices",
    virtual_service_weights,
    virtual_service_mirrors,
)
# An InferenceModelRewrite rule's targets (by index) and their weights; a target at 0 is absent.
MODEL_REWRITE = RouteKind(
    "InferenceModelRewrite",
    *REWRITE_RESOURCE,
    lambda rewrite, rule: rule_targets(rewrite, rule or 0)[1],
    lambda rewrite, rule: {},
)
KINDS = {kind.kind: kind for kind in (HTTP_ROUTE, GRPC_ROUTE, VIRTUAL_SERVICE)}


def route_watcher(
    api: CustomObjectsApi, namespace: str, kind: RouteKind, name: str, rule: Any = None
) -> HTTPRouteWatcher:
    """A watcher that follows one rule of a route of `kind` (rule None: rule 0, or Istio's only
    http route)."""
    if rule is None and kind is not VIRTUAL_SERVICE:
        rule = 0
    return HTTPRouteWatcher(
        api,
        namespace,
        name,
        resource=(kind.group, kind.version, kind.plural),
        parse=lambda route: (kind.weights(route, rule), kind.mirrors(route, rule)),
    )


def grpc_route(
    name: str, namespace: str, weights: dict[str, int], gateway: str = "inference"
) -> dict[str, Any]:
    """An HTTPRoute's twin (testbed.manifests.http_route) of kind GRPCRoute, matching a gRPC method."""
    route = http_route(name, namespace, weights, gateway)
    route["kind"] = "GRPCRoute"
    route["spec"]["rules"][0]["matches"] = [{"method": {"service": "chat.v1.Chat"}}]
    return route


def virtual_service(
    name: str, namespace: str, weights: dict[str, int], http_route: str = "primary"
) -> dict[str, Any]:
    """One http route named `http_route` whose destinations are the given hosts (`host/subset`
    for a subset), with their weights."""
    destinations = []
    for key, weight in weights.items():
        host, _, subset = key.partition("/")
        destination = {"host": host, **({"subset": subset} if subset else {})}
        destinations.append({"destination": destination, "weight": weight})
    return {
        "apiVersion": f"{ISTIO_GROUP}/{ISTIO_VERSION}",
        "kind": "VirtualService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"hosts": ["chat"], "http": [{"name": http_route, "route": destinations}]},
    }
