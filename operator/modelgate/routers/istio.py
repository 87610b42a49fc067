"""Traffic splitting through the weights of two destinations in Istio VirtualServices.

Traffic splitting through the weights of two destinations in HTTP routes of Istio VirtualServices
(networking.istio.io/v1): spec.http[].route[].{destination: {host, subset}, weight}.

Only those weights (and, for a mirror step, the http route's mirror to the candidate: istio_mirror.py)
are ever written (routers/patched.py), every named http route of a VirtualService in one patch. Several
VirtualServices are moved together by a GroupRouter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from modelgate.api import IstioDestination, IstioRouting, VirtualServiceRef
from modelgate.api.series import SeriesSide
from modelgate.core import LiveRoute, Reason, RouteProblem
from modelgate.kube import Kube
from modelgate.routers.base import DEPLOYMENT_SIDES, SideKinds, TrafficRouter
from modelgate.routers.group import GroupRouter, agreed
from modelgate.routers.istio_mirror import HttpMirror, http_mirror, http_mirror_patch
from modelgate.routers.patched import JsonPatch, PatchedRouter, RouteObject, set_weight_op, version_test
from modelgate.routers.router_kind import RouteKey, RouteResource, RouterKind

ISTIO_GROUP = "networking.istio.io"
ISTIO_VERSION = "v1"
VIRTUALSERVICES = "virtualservices"
SPEC_FIELD = "spec.trafficRouting.istio"


@dataclass(frozen=True)
class DestinationPair:
    """Where the two destinations sit in one http route (spec.http[http_index].route[...])."""

    http_name: str
    http_index: int
    incumbent_index: int
    candidate_index: int
    incumbent_weight: int
    candidate_weight: int
    mirror: HttpMirror
    http: Mapping[str, Any]  # the http route, for its mirror
    where: str  # the http route, for people

    def live(self) -> LiveRoute:
        return LiveRoute(self.incumbent_weight, self.candidate_weight, mirror_percent=self.mirror.percent)

    def patch(self, candidate_weight: int, mirror_percent: int) -> JsonPatch | RouteProblem:
        http = f"/spec/http/{self.http_index}"
        candidate = self.http["route"][self.candidate_index]["destination"]
        mirror = http_mirror_patch(self.where, http, self.http, candidate, self.mirror, mirror_percent)
        if isinstance(mirror, RouteProblem):
            return mirror
        return [
            set_weight_op(f"{http}/route/{self.incumbent_index}/weight", 100 - candidate_weight),
            set_weight_op(f"{http}/route/{self.candidate_index}/weight", candidate_weight),
            *mirror,
        ]


@dataclass(frozen=True)
class HttpRoutePairs:
    """The two destinations in each named http route of one VirtualService."""

    pairs: tuple[DestinationPair, ...]

    @property
    def rule_indexes(self) -> tuple[int, ...]:
        return tuple(pair.http_index for pair in self.pairs)

    def live(self, other_writer: str | None = None) -> LiveRoute:
        found = agreed([(f"http route {pair.http_name}", pair.live()) for pair in self.pairs])
        return replace(found, other_writer=other_writer)

    def patch(
        self, resource_version: str, candidate_weight: int, mirror_percent: int
    ) -> JsonPatch | RouteProblem:
        operations = [version_test(resource_version)]
        for pair in self.pairs:
            written = pair.patch(candidate_weight, mirror_percent)
            if isinstance(written, RouteProblem):
                return written
            operations += written
        return operations


def locate_destinations(
    service: Mapping[str, Any], ref: VirtualServiceRef, routing: IstioRouting, field: str
) -> HttpRoutePairs | RouteProblem:
    """Finds the two destinations, and the candidate's mirror, in each http route `ref` names (or in
    the only one) of a VirtualService object; `field` is the spec object that names the
    VirtualService."""
    metadata = service.get("metadata", {})
    service_id = f"VirtualService {metadata.get('namespace')}/{metadata.get('name')}"
    http: Sequence[Mapping[str, Any]] = service.get("spec", {}).get("http") or []
    indexes = _http_indexes(http, ref, service_id, field)
    if isinstance(indexes, RouteProblem):
        return indexes
    pairs = []
    for index in indexes:
        name = str(http[index].get("name") or index)
        where = f"http route {name} of {service_id}"
        destinations: Sequence[Mapping[str, Any]] = http[index].get("route") or []
        incumbent = _destination_index(
            destinations, routing.incumbent_destination, "incumbentDestination", where
        )
        if isinstance(incumbent, RouteProblem):
            return incumbent
        candidate = _destination_index(
            destinations, routing.candidate_destination, "candidateDestination", where
        )
        if isinstance(candidate, RouteProblem):
            return candidate
        pairs.append(
            DestinationPair(
                http_name=name,
                http_index=index,
                incumbent_index=incumbent,
                candidate_index=candidate,
                incumbent_weight=destination_weight(destinations, incumbent),
                candidate_weight=destination_weight(destinations, candidate),
                mirror=http_mirror(http[index], lambda found: _matches(found, routing.candidate_destination)),
                http=http[index],
                where=f"{where} (spec.http[{index}])",
            )
        )
    return HttpRoutePairs(tuple(pairs))


def destination_weight(destinations: Sequence[Mapping[str, Any]], index: int) -> int:
    """Istio: a lone destination takes all traffic; among several, one without a weight takes none."""
    weight = destinations[index].get("weight")
    if weight is None:
        return 100 if len(destinations) == 1 else 0
    return int(weight)


def _http_indexes(
    http: Sequence[Mapping[str, Any]], ref: VirtualServiceRef, service_id: str, field: str
) -> list[int] | RouteProblem:
    if ref.routes is None:
        if len(http) != 1:
            return RouteProblem(
                Reason.RULE_NOT_FOUND,
                f"{service_id} has {len(http)} http routes; name the ones to move in {field}.routes",
            )
        return [0]
    indexes = []
    present = ", ".join(str(route.get("name")) for route in http if route.get("name")) or "none"
    for name in ref.routes:
        found = [i for i, route in enumerate(http) if route.get("name") == name]
        if len(found) != 1:
            what = "no http route" if not found else f"{len(found)} http routes"
            return RouteProblem(
                Reason.RULE_NOT_FOUND,
                f"{service_id} has {what} named {name} ({field}.routes); it has: {present}",
            )
        indexes.append(found[0])
    return indexes


def _destination_index(
    destinations: Sequence[Mapping[str, Any]], wanted: IstioDestination, field: str, where: str
) -> int | RouteProblem:
    found = [i for i, entry in enumerate(destinations) if _matches(entry.get("destination") or {}, wanted)]
    if len(found) == 1:
        return found[0]
    named = wanted.host if wanted.subset is None else f"{wanted.host} subset {wanted.subset}"
    if not found:
        present = ", ".join(_describe(d.get("destination") or {}) for d in destinations) or "none"
        return RouteProblem(
            Reason.BACKEND_NOT_FOUND,
            f"{where} has no destination {named} ({SPEC_FIELD}.{field}); it has: {present}",
        )
    return RouteProblem(
        Reason.BACKEND_AMBIGUOUS,
        f"{where} has {len(found)} destinations {named} ({SPEC_FIELD}.{field}); keep one so that its"
        " weight is unambiguous",
    )


def _matches(destination: Mapping[str, Any], wanted: IstioDestination) -> bool:
    return destination.get("host") == wanted.host and destination.get("subset") == wanted.subset


def _describe(destination: Mapping[str, Any]) -> str:
    subset = destination.get("subset")
    return str(destination.get("host")) + (f" subset {subset}" if subset else "")


class IstioRouter(PatchedRouter):
    """The named http routes of one VirtualService; `field` is the spec object that names it."""

    def __init__(
        self, kube: Kube, namespace: str, routing: IstioRouting, ref: VirtualServiceRef, field: str
    ) -> None:
        name_field = f"{field}.virtualService" if field == SPEC_FIELD else f"{field}.name"
        service = RouteObject(
            ISTIO_GROUP,
            ISTIO_VERSION,
            VIRTUALSERVICES,
            "VirtualService",
            namespace,
            ref.name,
            field=name_field,
            weights_list="http",
        )
        super().__init__(kube, service, lambda found: locate_destinations(found, ref, routing, field))


def istio_router(
    kube: Kube, namespace: str, routing: IstioRouting, kinds: SideKinds = DEPLOYMENT_SIDES
) -> TrafficRouter:
    """The router for spec.trafficRouting.istio: one VirtualService, or several moved together.
    Destinations are Services: `kinds` must be Deployment sides (the spec's validation says so)."""
    assert kinds == DEPLOYMENT_SIDES, "spec validation keeps InferencePool sides to the gatewayAPI router"
    if routing.virtual_services is None:
        (only,) = routing.virtual_service_refs
        return IstioRouter(kube, namespace, routing, only, SPEC_FIELD)
    routers = [
        (
            f"VirtualService {ref.name}",
            IstioRouter(kube, namespace, routing, ref, f"{SPEC_FIELD}.virtualServices[{i}]"),
        )
        for i, ref in enumerate(routing.virtual_services)
    ]
    return routers[0][1] if len(routers) == 1 else GroupRouter(routers)


def _named_routes(routing: IstioRouting) -> list[RouteKey]:
    return [(VIRTUALSERVICES, ref.name) for ref in routing.virtual_service_refs]


def _backend_service(routing: IstioRouting, side: SeriesSide) -> str:
    return (routing.candidate_destination if side == "candidate" else routing.incumbent_destination).host


ISTIO = RouterKind(
    key="istio",
    config=IstioRouting,
    resources=(RouteResource(ISTIO_GROUP, ISTIO_VERSION, VIRTUALSERVICES),),
    named_routes=_named_routes,
    backend_service=_backend_service,
    factory=istio_router,
    what_it_writes="VirtualServices: the weights of two destinations of http routes, their mirror",
)
