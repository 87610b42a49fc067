"""Traffic routers, one module each, chosen by the key the spec sets under `spec.trafficRouting`.

Adding a router: a module with a factory taking (kube, namespace, <its config model>, SideKinds) and
returning a TrafficRouter (a GroupRouter when the config names several objects), plus one line in
ROUTERS (and its field in TrafficRouting and the CRD).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from modelgate.api import TrafficRouting
from modelgate.kube import Kube
from modelgate.routers.base import DEPLOYMENT_SIDES, SideKinds, TrafficRouter
from modelgate.routers.gatewayapi import GatewayAPIRouter, gateway_api_router
from modelgate.routers.group import GroupRouter
from modelgate.routers.istio import IstioRouter, istio_router

RouterFactory = Callable[[Kube, str, Any, SideKinds], TrafficRouter]

ROUTERS: dict[str, RouterFactory] = {
    "gatewayAPI": gateway_api_router,
    "istio": istio_router,
}


class UnknownRouterError(ValueError):
    """No router is registered for the key the spec sets."""


def router_for(
    routing: TrafficRouting, kube: Kube, namespace: str, kinds: SideKinds = DEPLOYMENT_SIDES
) -> TrafficRouter:
    """The router for the key set in `routing` (e.g. "gatewayAPI"), configured by that key's value,
    looking for the backends of the sides' `kinds`."""
    key = routing.router_key
    factory = ROUTERS.get(key)
    if factory is None:
        registered = ", ".join(sorted(ROUTERS))
        raise UnknownRouterError(
            f"no traffic router is registered for spec.trafficRouting.{key}; registered: {registered}"
        )
    return factory(kube, namespace, _router_config(routing, key), kinds)


def _router_config(routing: TrafficRouting, key: str) -> Any:
    for name, field in type(routing).model_fields.items():
        if field.alias == key:
            return getattr(routing, name)
    raise UnknownRouterError(f"spec.trafficRouting has no field {key}")


__all__ = [
    "ROUTERS",
    "GatewayAPIRouter",
    "GroupRouter",
    "IstioRouter",
    "SideKinds",
    "TrafficRouter",
    "UnknownRouterError",
    "router_for",
]
