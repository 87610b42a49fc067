"""Traffic splitting through the backend weights of Gateway API HTTPRoutes and GRPCRoutes.

Traffic splitting through the backend weights of rules of Gateway API HTTPRoutes and GRPCRoutes
(both kinds hold them the same way: spec.rules[].backendRefs[]).

Only the `weight` of the two named backendRefs (and, for a mirror step, the rule's RequestMirror filter
to the candidate: mirror_filter.py) is ever written (routers/patched.py). One rule of one route is one
GatewayAPIRouter; several (`routes`) are moved together by a GroupRouter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from modelgate.api import BackendKind, GatewayAPIRouting, GatewayRouteRef
from modelgate.api.series import SeriesSide
from modelgate.core import LiveRoute, Reason, RouteProblem
from modelgate.core.reasons import how_many
from modelgate.kube import Kube
from modelgate.kube.pools import INFERENCE_GROUP
from modelgate.routers.base import DEPLOYMENT_SIDES, SideKinds, TrafficRouter
from modelgate.routers.group import GroupRouter
from modelgate.routers.mirror_filter import CandidateMirrors, candidate_mirrors, mirror_patch
from modelgate.routers.patched import JsonPatch, PatchedRouter, RouteObject, set_weight_op, version_test
from modelgate.routers.router_kind import RouteKey, RouteResource, RouterKind

GATEWAY_GROUP = "gateway.networking.k8s.io"
GATEWAY_VERSION = "v1"
HTTPROUTES = "httproutes"
GRPCROUTES = "grpcroutes"
DEFAULT_WEIGHT = 1  # what Gateway API implementations use for a backendRef without a weight
SPEC_FIELD = "spec.trafficRouting.gatewayAPI"
# The (group, kind) of the backendRef that reaches each kind of side.
BACKEND_REF_KINDS: dict[BackendKind, tuple[str, str]] = {
    "Deployment": ("", "Service"),
    "InferencePool": (INFERENCE_GROUP, "InferencePool"),
}


@dataclass(frozen=True)
class RouteKind:
    kind: str
    plural: str
    field: str  # the spec field that names a route of this kind


HTTP_ROUTE = RouteKind("HTTPRoute", HTTPROUTES, "httpRoute")
GRPC_ROUTE = RouteKind("GRPCRoute", GRPCROUTES, "grpcRoute")
ROUTE_KINDS = (HTTP_ROUTE, GRPC_ROUTE)


@dataclass(frozen=True)
class RouteTarget:
    """One rule of one route holding the two backends; `field` is the spec object that names it."""

    kind: RouteKind
    name: str
    rule_index: int
    incumbent_backend: str
    candidate_backend: str
    field: str = SPEC_FIELD


def route_targets(routing: GatewayAPIRouting) -> list[RouteTarget]:
    """Every rule the spec names, each with the path of the spec field that names it."""
    refs = routing.route_refs
    return [
        _target(ref, routing, SPEC_FIELD if routing.routes is None else f"{SPEC_FIELD}.routes[{i}]")
        for i, ref in enumerate(refs)
    ]


def _target(ref: GatewayRouteRef, routing: GatewayAPIRouting, field: str) -> RouteTarget:
    kind, name = (HTTP_ROUTE, ref.http_route) if ref.http_route is not None else (GRPC_ROUTE, ref.grpc_route)
    assert name is not None, "the spec's validator lets exactly one of httpRoute or grpcRoute through"
    return RouteTarget(
        kind, name, ref.rule_index, routing.incumbent_backend, routing.candidate_backend, field
    )


@dataclass(frozen=True)
class BackendPair:
    """Where the incumbent's and the candidate's backendRefs sit in a route, and their weights."""

    rule_index: int
    incumbent_index: int
    candidate_index: int | None  # None: a generated candidate without its backendRef (yet, or any more)
    incumbent_weight: int
    candidate_weight: int

    def live(self, other_writer: str | None = None) -> LiveRoute:
        return LiveRoute(self.incumbent_weight, self.candidate_weight, other_writer)

    def patch(self, resource_version: str, candidate_weight: int) -> JsonPatch:
        refs = f"/spec/rules/{self.rule_index}/backendRefs"
        ops = [
            version_test(resource_version),
            set_weight_op(f"{refs}/{self.incumbent_index}/weight", 100 - candidate_weight),
        ]
        if self.candidate_index is not None:
            ops.append(set_weight_op(f"{refs}/{self.candidate_index}/weight", candidate_weight))
        return ops


def locate_backends(
    route: Mapping[str, Any], target: RouteTarget, kinds: SideKinds = DEPLOYMENT_SIDES
) -> BackendPair | RouteProblem:
    """Finds the two backendRefs named by `target` in a route object (a dict as the API server
    returns it). A backendRef counts when its name matches and it refers to the side's kind of
    backend in the route's own namespace: a Service for a Deployment side (kind absent or "Service",
    group absent or ""), the InferencePool for a pool side (group inference.networking.k8s.io, kind
    InferencePool); namespace absent or the route's."""
    metadata = route.get("metadata", {})
    route_id = f"{target.kind.kind} {metadata.get('namespace')}/{metadata.get('name')}"
    rules: Sequence[Mapping[str, Any]] = route.get("spec", {}).get("rules") or []
    index = target.rule_index
    if index >= len(rules):
        return RouteProblem(
            Reason.RULE_NOT_FOUND,
            f"{route_id} has {how_many(len(rules), 'rule')}; {target.field}.ruleIndex is {index}",
        )
    refs: Sequence[Mapping[str, Any]] = rules[index].get("backendRefs") or []
    where = f"rule {index} of {route_id}"
    namespace = metadata.get("namespace")
    incumbent = _backend_index(
        refs, target.incumbent_backend, "incumbentBackend", where, namespace, kinds.incumbent
    )
    if isinstance(incumbent, RouteProblem):
        return incumbent
    candidate: int | RouteProblem | None = _backend_index(
        refs, target.candidate_backend, "candidateBackend", where, namespace, kinds.candidate
    )
    if (
        isinstance(candidate, RouteProblem)
        and candidate.reason is Reason.BACKEND_NOT_FOUND
        and kinds.generated
    ):
        candidate = None
    if isinstance(candidate, RouteProblem):
        return candidate
    return BackendPair(
        rule_index=index,
        incumbent_index=incumbent,
        candidate_index=candidate,
        incumbent_weight=backend_weight(refs[incumbent]),
        candidate_weight=0 if candidate is None else backend_weight(refs[candidate]),
    )


def backend_weight(ref: Mapping[str, Any]) -> int:
    weight = ref.get("weight")
    return DEFAULT_WEIGHT if weight is None else int(weight)


def _refers_to_local(ref: Mapping[str, object], namespace: str | None, kind: BackendKind) -> bool:
    return (ref.get("group", ""), ref.get("kind", "Service")) == BACKEND_REF_KINDS[kind] and ref.get(
        "namespace", namespace
    ) == namespace


def _backend_index(
    refs: Sequence[Mapping[str, Any]],
    name: str,
    field: str,
    where: str,
    namespace: str | None,
    kind: BackendKind,
) -> int | RouteProblem:
    found = [
        i for i, ref in enumerate(refs) if ref.get("name") == name and _refers_to_local(ref, namespace, kind)
    ]
    if not found:
        present = ", ".join(_describe(ref, namespace, kind) for ref in refs) or "none"
        wanted = "/".join(part for part in BACKEND_REF_KINDS[kind] if part)
        return RouteProblem(
            Reason.BACKEND_NOT_FOUND,
            f"{where} has no {wanted} backendRef named {name} ({SPEC_FIELD}.{field}); it has: {present}",
        )
    if len(found) > 1:
        positions = ", ".join(f"backendRefs[{i}]" for i in found)
        return RouteProblem(
            Reason.BACKEND_AMBIGUOUS,
            f"{where} has {len(found)} backendRefs named {name} ({SPEC_FIELD}.{field}): {positions};"
            " keep one so that its weight is unambiguous",
        )
    return found[0]


def _describe(ref: Mapping[str, Any], namespace: str | None, kind: BackendKind) -> str:
    """A backendRef's name, with what disqualifies it when it is not the wanted kind of backend in
    this namespace."""
    name = str(ref.get("name"))
    if _refers_to_local(ref, namespace, kind):
        return name
    group, ref_kind = ref.get("group", ""), ref.get("kind", "Service")
    if (group, ref_kind) != BACKEND_REF_KINDS[kind]:
        return f"{name} ({group}/{ref_kind})" if group else f"{name} ({ref_kind})"
    return f"{name} (namespace {ref.get('namespace')})"


@dataclass(frozen=True)
class LocatedRule:
    """The two backends in one version of a route, with what of the rule a mirror step writes: the
    candidate's RequestMirror filters (mirror_filter.py)."""

    pair: BackendPair
    rule: Mapping[str, Any]
    mirrors: CandidateMirrors
    where: str  # the rule, for people

    @property
    def rule_indexes(self) -> tuple[int, ...]:
        return (self.pair.rule_index,)

    def live(self, other_writer: str | None = None) -> LiveRoute:
        return replace(self.pair.live(other_writer), mirror_percent=self.mirrors.percent)

    def patch(
        self, resource_version: str, candidate_weight: int, mirror_percent: int
    ) -> JsonPatch | RouteProblem:
        index = self.pair.rule_index
        if self.pair.candidate_index is None:
            if candidate_weight or mirror_percent:
                message = f"{self.where} has no backendRef for the generated candidate yet"
                return RouteProblem(Reason.BACKEND_NOT_FOUND, message)
            return self.pair.patch(resource_version, candidate_weight)
        copies = mirror_patch(
            self.where,
            f"/spec/rules/{index}",
            self.rule,
            self.rule["backendRefs"][self.pair.candidate_index],
            self.mirrors,
            mirror_percent,
        )
        if isinstance(copies, RouteProblem):
            return copies
        return self.pair.patch(resource_version, candidate_weight) + copies


def locate_rule(
    route: Mapping[str, Any], target: RouteTarget, kinds: SideKinds = DEPLOYMENT_SIDES
) -> LocatedRule | RouteProblem:
    """The two backends of `target` in a route object, and the candidate's mirror filters beside them."""
    pair = locate_backends(route, target, kinds)
    if isinstance(pair, RouteProblem):
        return pair
    namespace = route.get("metadata", {}).get("namespace")
    rule = route["spec"]["rules"][pair.rule_index]

    def to_candidate(ref: Mapping[str, Any]) -> bool:
        named = ref.get("name") == target.candidate_backend
        return named and _refers_to_local(ref, namespace, kinds.candidate)

    where = f"rule {pair.rule_index} of {target.kind.kind} {namespace}/{target.name}"
    return LocatedRule(pair, rule, candidate_mirrors(rule, to_candidate), where)


class GatewayAPIRouter(PatchedRouter):
    """One rule of one HTTPRoute or GRPCRoute."""

    def __init__(
        self, kube: Kube, namespace: str, target: RouteTarget, kinds: SideKinds = DEPLOYMENT_SIDES
    ) -> None:
        route = RouteObject(
            GATEWAY_GROUP,
            GATEWAY_VERSION,
            target.kind.plural,
            target.kind.kind,
            namespace,
            target.name,
            field=f"{target.field}.{target.kind.field}",
            weights_list="rules",
        )
        super().__init__(kube, route, lambda found: locate_rule(found, target, kinds))
        self.target = target


def gateway_api_router(
    kube: Kube, namespace: str, routing: GatewayAPIRouting, kinds: SideKinds = DEPLOYMENT_SIDES
) -> TrafficRouter:
    """The router for spec.trafficRouting.gatewayAPI: one rule, or several moved together."""
    targets = route_targets(routing)
    routers = [(_describe_target(t), GatewayAPIRouter(kube, namespace, t, kinds)) for t in targets]
    return routers[0][1] if len(routers) == 1 else GroupRouter(routers)


def _describe_target(target: RouteTarget) -> str:
    return f"{target.kind.kind} {target.name} rule {target.rule_index}"


def _named_routes(routing: GatewayAPIRouting) -> list[RouteKey]:
    return [(target.kind.plural, target.name) for target in route_targets(routing)]


def _backend_service(routing: GatewayAPIRouting, side: SeriesSide) -> str:
    return routing.candidate_backend if side == "candidate" else routing.incumbent_backend


GATEWAY_API = RouterKind(
    key="gatewayAPI",
    config=GatewayAPIRouting,
    resources=tuple(RouteResource(GATEWAY_GROUP, GATEWAY_VERSION, kind.plural) for kind in ROUTE_KINDS),
    named_routes=_named_routes,
    backend_service=_backend_service,
    factory=gateway_api_router,
    what_it_writes="HTTPRoutes and GRPCRoutes: two backendRefs' weights in a rule, its RequestMirror filter, "
    "a one-edit rollout's candidate backendRef (added at weight 0, removed)",
)
