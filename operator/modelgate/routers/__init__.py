"""Traffic routers, one module each, chosen by the key the spec sets under `spec.trafficRouting`.

Each router module ends with its RouterKind record (router_kind.py): its key, config model, the
objects it watches, the Service a gate check calls, its RBAC and its factory. Adding a router is
that module and one line in ROUTERS (docs/architecture.md, "Adding a router").
"""

from __future__ import annotations

from typing import Any

from modelgate.api import ModelRolloutSpec, TrafficRouting
from modelgate.api.series import SeriesSide
from modelgate.kube import Kube
from modelgate.routers.base import DEPLOYMENT_SIDES, SideKinds, TrafficRouter
from modelgate.routers.gatewayapi import GATEWAY_API, GatewayAPIRouter
from modelgate.routers.group import GroupRouter
from modelgate.routers.istio import ISTIO, IstioRouter
from modelgate.routers.model_rewrite import MODEL_REWRITE
from modelgate.routers.router_kind import RouterKind

ROUTERS: dict[str, RouterKind[Any]] = {
    kind.key: kind
    for kind in (
        GATEWAY_API,
        ISTIO,
        MODEL_REWRITE,
    )
}


class UnknownRouterError(ValueError):
    """No router is registered for the key the spec sets."""


def router_kind(key: str) -> RouterKind[Any]:
    kind = ROUTERS.get(key)
    if kind is None:
        registered = ", ".join(sorted(ROUTERS))
        raise UnknownRouterError(
            f"no traffic router is registered for spec.trafficRouting.{key}; registered: {registered}"
        )
    return kind


def router_for(
    routing: TrafficRouting, kube: Kube, namespace: str, kinds: SideKinds = DEPLOYMENT_SIDES
) -> TrafficRouter:
    """The router for the key set in `routing` (e.g. "gatewayAPI"), configured by that key's value,
    looking for the backends of the sides' `kinds`."""
    kind = router_kind(routing.router_key)
    return kind.factory(kube, namespace, _router_config(routing, kind.key), kinds)


def backend_service(spec: ModelRolloutSpec, side: SeriesSide) -> str | None:
    """The Service that reaches a side, as its router names it (where a gate check calls it by
    default); None for an InferencePool side, which has none."""
    if (spec.candidate if side == "candidate" else spec.incumbent).inference_pool is not None:
        return None
    kind = router_kind(spec.traffic_routing.router_key)
    return kind.backend_service(_router_config(spec.traffic_routing, kind.key), side)


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
    "RouterKind",
    "SideKinds",
    "TrafficRouter",
    "UnknownRouterError",
    "backend_service",
    "router_for",
    "router_kind",
]
