"""Traffic splitting through the backend weights of one rule of a Gateway API HTTPRoute.

Only the `weight` of the two named backendRefs (and, for a mirror step, the rule's RequestMirror filter
to the candidate: mirror_filter.py) is ever written, with a JSON patch guarded by a `test` of the
resourceVersion that was read: every other field, rule, filter and backendRef stays as its owner
left it, and a write that raced with another writer is redone on the fresh object.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from modelgate.api import BackendKind, GatewayAPIRouting
from modelgate.core import LiveRoute, Reason, RouteProblem
from modelgate.kube import FIELD_MANAGER, Conflict, Kube, KubeError, NotFound, PatchNotApplied
from modelgate.kube.pools import INFERENCE_GROUP
from modelgate.routers.base import DEPLOYMENT_SIDES, SideKinds
from modelgate.routers.mirror_filter import CandidateMirrors, candidate_mirrors, mirror_patch

GATEWAY_GROUP = "gateway.networking.k8s.io"
GATEWAY_VERSION = "v1"
HTTPROUTES = "httproutes"
DEFAULT_WEIGHT = 1  # what Gateway API implementations use for a backendRef without a weight
MAX_WRITE_ATTEMPTS = 5
SPEC_FIELD = "spec.trafficRouting.gatewayAPI"
# The (group, kind) of the backendRef that reaches each kind of side.
BACKEND_REF_KINDS: dict[BackendKind, tuple[str, str]] = {
    "Deployment": ("", "Service"),
    "InferencePool": (INFERENCE_GROUP, "InferencePool"),
}


@dataclass(frozen=True)
class BackendPair:
    """Where the incumbent's and the candidate's backendRefs sit in a route, and their weights."""

    rule_index: int
    incumbent_index: int
    candidate_index: int
    incumbent_weight: int
    candidate_weight: int

    def live(self, other_writer: str | None = None) -> LiveRoute:
        return LiveRoute(self.incumbent_weight, self.candidate_weight, other_writer)


def rules_writer(route: Mapping[str, Any], own_manager: str = FIELD_MANAGER) -> str | None:
    """Who last changed `spec.rules` (the backendRefs and their weights), from metadata.managedFields:
    the most recent field manager that owns any of it, or None when that is `own_manager` (the
    operator) or no entry says. `spec.rules` is an atomic list, so a write of any weight makes its
    writer the only Update owner of all of it."""
    owners = [
        entry
        for entry in route.get("metadata", {}).get("managedFields") or []
        if "f:rules" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
    ]
    if not owners or any(entry.get("manager") == own_manager for entry in owners):
        return None
    latest = max(owners, key=lambda entry: str(entry.get("time") or ""))
    return str(latest.get("manager") or "an unnamed field manager")


def locate_backends(
    route: Mapping[str, Any], routing: GatewayAPIRouting, kinds: SideKinds = DEPLOYMENT_SIDES
) -> BackendPair | RouteProblem:
    """Finds the two backendRefs named by `routing` in an HTTPRoute object (a dict as the API
    server returns it). A backendRef counts when its name matches and it refers to the side's kind
    of backend in the route's own namespace: a Service for a Deployment side (kind absent or
    "Service", group absent or ""), the InferencePool for a pool side (group
    inference.networking.k8s.io, kind InferencePool); namespace absent or the route's."""
    metadata = route.get("metadata", {})
    route_id = f"{metadata.get('namespace')}/{metadata.get('name')}"
    rules: Sequence[Mapping[str, Any]] = route.get("spec", {}).get("rules") or []
    index = routing.rule_index
    if index >= len(rules):
        return RouteProblem(
            Reason.RULE_NOT_FOUND,
            f"HTTPRoute {route_id} has {len(rules)} rule(s); {SPEC_FIELD}.ruleIndex is {index}",
        )
    refs: Sequence[Mapping[str, Any]] = rules[index].get("backendRefs") or []
    where = f"rule {index} of HTTPRoute {route_id}"
    namespace = metadata.get("namespace")
    incumbent = _backend_index(
        refs, routing.incumbent_backend, "incumbentBackend", where, namespace, kinds.incumbent
    )
    if isinstance(incumbent, RouteProblem):
        return incumbent
    candidate = _backend_index(
        refs, routing.candidate_backend, "candidateBackend", where, namespace, kinds.candidate
    )
    if isinstance(candidate, RouteProblem):
        return candidate
    return BackendPair(
        rule_index=index,
        incumbent_index=incumbent,
        candidate_index=candidate,
        incumbent_weight=backend_weight(refs[incumbent]),
        candidate_weight=backend_weight(refs[candidate]),
    )


def backend_weight(ref: Mapping[str, Any]) -> int:
    weight = ref.get("weight")
    return DEFAULT_WEIGHT if weight is None else int(weight)


def weight_patch(pair: BackendPair, resource_version: str, candidate_weight: int) -> list[dict[str, Any]]:
    """A JSON patch that sets the two weights, and applies only to the object at `resource_version`
    (the one `pair` was located in), so the indexes cannot point at other backends. `add` sets a
    member whether or not it exists, so an absent weight is written too."""
    refs = f"/spec/rules/{pair.rule_index}/backendRefs"
    return [
        {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
        {"op": "add", "path": f"{refs}/{pair.incumbent_index}/weight", "value": 100 - candidate_weight},
        {"op": "add", "path": f"{refs}/{pair.candidate_index}/weight", "value": candidate_weight},
    ]


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


class GatewayAPIRouter:
    def __init__(
        self, kube: Kube, namespace: str, routing: GatewayAPIRouting, kinds: SideKinds = DEPLOYMENT_SIDES
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.routing = routing
        self.kinds = kinds
        self._seen: dict[str, Any] | None = None  # the route as last read or written

    @property
    def route_id(self) -> str:
        return f"{self.namespace}/{self.routing.http_route}"

    def read(self) -> LiveRoute | RouteProblem:
        route = self._seen = self._get_route()
        if route is None:
            return self._route_not_found()
        located = locate_backends(route, self.routing, self.kinds)
        if isinstance(located, RouteProblem):
            return located
        mirrors = self._mirrors(route, located)
        return replace(located.live(rules_writer(route)), mirror_percent=mirrors.percent)

    def set_weights(self, candidate_weight: int, mirror_percent: int = 0) -> LiveRoute | RouteProblem:
        if not (0 <= candidate_weight <= 100 and 0 <= mirror_percent <= 100):
            raise ValueError(f"weight and mirror must be 0..100, got {candidate_weight} and {mirror_percent}")
        rejected: tuple[str, PatchNotApplied] | None = None
        for attempt in range(MAX_WRITE_ATTEMPTS):
            # The route `read` saw (or the cache's copy); after a failed precondition, the server's.
            route = (
                self._seen if attempt == 0 and self._seen is not None else self._get_route(fresh=attempt > 0)
            )
            self._seen = None
            if route is None:
                return self._route_not_found()
            version = str(route["metadata"]["resourceVersion"])
            if rejected is not None and rejected[0] == version:
                # The patch failed although the route had not changed: not a race, so not retried.
                raise KubeError(
                    rejected[1].status,
                    f"HTTPRoute {self.route_id}: the API server could not apply the weight patch to an"
                    f" unchanged route: {rejected[1].message}",
                ) from rejected[1]
            located = locate_backends(route, self.routing, self.kinds)
            if isinstance(located, RouteProblem):
                return located
            mirror = self._mirror_patch(route, located, mirror_percent)
            if isinstance(mirror, RouteProblem):
                return mirror
            try:
                written = self.kube.json_patch_custom(
                    GATEWAY_GROUP,
                    GATEWAY_VERSION,
                    self.namespace,
                    HTTPROUTES,
                    self.routing.http_route,
                    weight_patch(located, version, candidate_weight) + mirror,
                )
            except NotFound:
                return self._route_not_found()
            except Conflict:
                continue
            except PatchNotApplied as rejection:
                # Almost always the resourceVersion `test`: another writer got in between. The next
                # read tells (a new resourceVersion), and the patch is rebuilt on the fresh route.
                rejected = (version, rejection)
                continue
            self._seen = written
            written_pair = locate_backends(written, self.routing, self.kinds)
            if isinstance(written_pair, RouteProblem):
                return written_pair
            return replace(written_pair.live(), mirror_percent=self._mirrors(written, written_pair).percent)
        raise Conflict(
            None,
            f"HTTPRoute {self.route_id} changed under each of {MAX_WRITE_ATTEMPTS} attempts to set its"
            " weights; giving up for now",
        )

    def _mirrors(self, route: Mapping[str, Any], pair: BackendPair) -> CandidateMirrors:
        def to_candidate(ref: Mapping[str, Any]) -> bool:
            named = ref.get("name") == self.routing.candidate_backend
            return named and _refers_to_local(ref, route["metadata"].get("namespace"), self.kinds.candidate)

        return candidate_mirrors(route["spec"]["rules"][pair.rule_index], to_candidate)

    def _mirror_patch(
        self, route: Mapping[str, Any], pair: BackendPair, percent: int
    ) -> list[dict[str, Any]] | RouteProblem:
        rule = route["spec"]["rules"][pair.rule_index]
        return mirror_patch(
            f"rule {pair.rule_index} of HTTPRoute {self.route_id}",
            f"/spec/rules/{pair.rule_index}",
            rule,
            rule["backendRefs"][pair.candidate_index],
            self._mirrors(route, pair),
            percent,
        )

    def _get_route(self, *, fresh: bool = False) -> dict[str, Any] | None:
        try:
            return self.kube.get_custom(
                GATEWAY_GROUP,
                GATEWAY_VERSION,
                self.namespace,
                HTTPROUTES,
                self.routing.http_route,
                fresh=fresh,
            )
        except NotFound:
            return None

    def _route_not_found(self) -> RouteProblem:
        return RouteProblem(
            Reason.ROUTE_NOT_FOUND, f"HTTPRoute {self.route_id} not found ({SPEC_FIELD}.httpRoute)"
        )
