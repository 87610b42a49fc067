"""Which objects a rollout's router reads, from the raw spec of a watch event (no validation: it runs
for every event, and a spec the models refuse still has routes worth watching): so that a change to
any of them wakes the rollout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelgate.routers.gatewayapi import GATEWAY_GROUP, GATEWAY_VERSION, ROUTE_KINDS
from modelgate.routers.istio import ISTIO_GROUP, ISTIO_VERSION, VIRTUALSERVICES

RouteKey = tuple[str, str]  # plural, name
# (group, version, plural) of every kind a router reads: the operator watches and caches them.
ROUTE_RESOURCES = (
    *((GATEWAY_GROUP, GATEWAY_VERSION, kind.plural) for kind in ROUTE_KINDS),
    (ISTIO_GROUP, ISTIO_VERSION, VIRTUALSERVICES),
)


def watched_routes(traffic_routing: Mapping[str, Any]) -> frozenset[RouteKey]:
    gateway = traffic_routing.get("gatewayAPI") or {}
    istio = traffic_routing.get("istio") or {}
    named: list[RouteKey] = []
    for ref in [gateway, *(gateway.get("routes") or [])]:
        named += [(kind.plural, str(ref[kind.field])) for kind in ROUTE_KINDS if ref.get(kind.field)]
    for ref in [{"name": istio.get("virtualService")}, *(istio.get("virtualServices") or [])]:
        if ref.get("name"):
            named.append((VIRTUALSERVICES, str(ref["name"])))
    return frozenset(named)
