"""Which objects a rollout's router reads, so that a change to any of them wakes it.

Which objects a rollout's router reads, from the spec of a watch event, so that a change to any of
them wakes the rollout; and every kind of object the registered routers read, which the operator
watches and caches. Both from the routers' records (routers/__init__.py:ROUTERS)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelgate.routers import ROUTERS
from modelgate.routers.router_kind import RouteKey, RouteResource


def route_resources() -> tuple[RouteResource, ...]:
    return tuple(dict.fromkeys(resource for kind in ROUTERS.values() for resource in kind.resources))


def watched_routes(traffic_routing: Mapping[str, Any]) -> frozenset[RouteKey]:
    """The objects named under the raw `spec.trafficRouting`, each router's section read through its
    config model (only that section: a spec refused elsewhere still has routes worth watching)."""
    sections = [(kind, traffic_routing.get(key)) for key, kind in ROUTERS.items()]
    named = [kind.watched(raw) for kind, raw in sections if isinstance(raw, Mapping)]
    return frozenset[RouteKey]().union(*named)
