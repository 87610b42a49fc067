"""Traffic splitting between two LoRA adapters of an InferencePool (llm-d's InferenceModelRewrite).

Traffic splitting between two LoRA adapters (model names) of one InferencePool through the target
weights of one rule of llm-d's InferenceModelRewrite (llm-d.ai/v1alpha2, llm-d-router v0.9.0 on):
spec.rules[ruleIndex].targets[] of {modelRewrite, weight}, the shape the Inference Extension's
inference.networking.x-k8s.io/v1alpha2 had until v1.6.0 removed it. An object of that removed group
is not written: when the named llm-d object is missing and one of the old group exists, the route
is not found with a message saying what replaced it (llm-d's EPP ignores the old group once its own
CRD is installed, so weights written there would move nothing).

Its API forbids weight 0 (1..1,000,000, proportional), so a side at 0 has no target: the router
removes the target and puts it back when the side gets traffic again. Only that rule's targets list
is written (routers/patched.py: a JSON patch guarded by the resourceVersion read), and only when it
holds nothing but the two adapters' targets; other rules and fields stay as their owners left them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.api.model_rewrite_routing import InferenceModelRewriteRouting
from modelgate.api.series import SeriesSide
from modelgate.core import LiveRoute, Reason, RouteProblem
from modelgate.core.reasons import how_many
from modelgate.kube import Kube
from modelgate.kube.pools import INFERENCE_GROUP
from modelgate.routers.base import AdapterSides, SideKinds, TrafficRouter
from modelgate.routers.patched import JsonPatch, PatchedRouter, RouteObject, version_test
from modelgate.routers.router_kind import RouteKey, RouteResource, RouterKind

REWRITE_GROUP = "llm-d.ai"
REWRITE_VERSION = "v1alpha2"
REMOVED_REWRITE_GROUP = "inference.networking.x-k8s.io"  # the Inference Extension's, until v1.6.0
MODEL_REWRITES = "inferencemodelrewrites"
SPEC_FIELD = "spec.trafficRouting.inferenceModelRewrite"
DEFAULT_WEIGHT = 1  # targets without weights share the rule's traffic equally


@dataclass(frozen=True)
class RewriteTargets:
    """The two adapters' targets in one version of a rule: their positions (None: no target, so no
    traffic) and weights."""

    rule_index: int
    targets: tuple[Mapping[str, Any], ...]
    incumbent_index: int | None
    candidate_index: int | None
    adapters: AdapterSides

    @property
    def rule_indexes(self) -> tuple[int, ...]:
        return (self.rule_index,)

    def live(self, other_writer: str | None = None) -> LiveRoute:
        incumbent, candidate = self._weight(self.incumbent_index), self._weight(self.candidate_index)
        share = round(100 * candidate / (incumbent + candidate))
        return LiveRoute(100 - share, share, other_writer)

    def _weight(self, index: int | None) -> int:
        if index is None:
            return 0
        weight = self.targets[index].get("weight")
        return DEFAULT_WEIGHT if weight is None else int(weight)

    def patch(
        self, resource_version: str, candidate_weight: int, mirror_percent: int
    ) -> JsonPatch | RouteProblem:
        if mirror_percent:
            return RouteProblem(
                Reason.WEIGHT_NOT_APPLIED,
                f"{SPEC_FIELD} cannot mirror: an InferenceModelRewrite sends each request to one target",
            )
        targets = [
            target
            for target in (
                self._target(self.incumbent_index, self.adapters.incumbent, 100 - candidate_weight),
                self._target(self.candidate_index, self.adapters.candidate, candidate_weight),
            )
            if target is not None
        ]
        path = f"/spec/rules/{self.rule_index}/targets"
        return [version_test(resource_version), {"op": "add", "path": path, "value": targets}]

    def _target(self, index: int | None, adapter: str, weight: int) -> dict[str, Any] | None:
        """The target with `weight` (its other fields kept), or none at 0."""
        if weight == 0:
            return None
        found = dict(self.targets[index]) if index is not None else {"modelRewrite": adapter}
        return found | {"weight": weight}


def locate_targets(
    rewrite: Mapping[str, Any], rule_index: int, adapters: AdapterSides
) -> RewriteTargets | RouteProblem:
    """The two adapters' targets in rule `rule_index` of an InferenceModelRewrite object (a dict as
    the API server returns it): the rule must hold no other target, and at least one of the two."""
    metadata = rewrite.get("metadata", {})
    rewrite_id = f"InferenceModelRewrite {metadata.get('namespace')}/{metadata.get('name')}"
    spec = rewrite.get("spec", {})
    pool = _pool_problem(spec.get("poolRef") or {}, rewrite_id, adapters.pool)
    if pool is not None:
        return pool
    rules: Sequence[Mapping[str, Any]] = spec.get("rules") or []
    if rule_index >= len(rules):
        return RouteProblem(
            Reason.RULE_NOT_FOUND,
            f"{rewrite_id} has {how_many(len(rules), 'rule')}; {SPEC_FIELD}.ruleIndex is {rule_index}",
        )
    targets = tuple(rules[rule_index].get("targets") or [])
    where = f"rule {rule_index} of {rewrite_id}"
    names = [str(target.get("modelRewrite")) for target in targets]
    others = [name for name in names if name not in (adapters.incumbent, adapters.candidate)]
    if others:
        return RouteProblem(
            Reason.BACKEND_AMBIGUOUS,
            f"{where} has targets other than {adapters.incumbent} (spec.incumbent.adapter) and "
            f"{adapters.candidate} (spec.candidate.adapter): {', '.join(others)}; their weights would take "
            "a share modelgate does not move",
        )
    for adapter in (adapters.incumbent, adapters.candidate):
        if names.count(adapter) > 1:
            return RouteProblem(
                Reason.BACKEND_AMBIGUOUS,
                f"{where} has {names.count(adapter)} targets rewriting to {adapter}; keep one so that its"
                " weight is unambiguous",
            )
    if not targets:
        return RouteProblem(
            Reason.BACKEND_NOT_FOUND,
            f"{where} has no target for {adapters.incumbent} (spec.incumbent.adapter) nor "
            f"{adapters.candidate} (spec.candidate.adapter)",
        )
    incumbent = names.index(adapters.incumbent) if adapters.incumbent in names else None
    candidate = names.index(adapters.candidate) if adapters.candidate in names else None
    return RewriteTargets(rule_index, targets, incumbent, candidate, adapters)


def _pool_problem(pool_ref: Mapping[str, Any], rewrite_id: str, pool: str) -> RouteProblem | None:
    group, kind = pool_ref.get("group", INFERENCE_GROUP), pool_ref.get("kind", "InferencePool")
    if (group, kind, pool_ref.get("name")) == (INFERENCE_GROUP, "InferencePool", pool):
        return None
    return RouteProblem(
        Reason.BACKEND_NOT_FOUND,
        f"{rewrite_id} rewrites requests to {group}/{kind} {pool_ref.get('name')}, not to InferencePool "
        f"{pool} (spec.candidate.inferencePool)",
    )


class ModelRewriteRouter(PatchedRouter):
    """One rule of one InferenceModelRewrite."""

    def __init__(
        self, kube: Kube, namespace: str, routing: InferenceModelRewriteRouting, adapters: AdapterSides
    ) -> None:
        rewrite = RouteObject(
            REWRITE_GROUP,
            REWRITE_VERSION,
            MODEL_REWRITES,
            "InferenceModelRewrite",
            namespace,
            routing.name,
            field=f"{SPEC_FIELD}.name",
            weights_list="rules",
        )
        super().__init__(kube, rewrite, lambda found: locate_targets(found, routing.rule_index, adapters))

    def _not_found(self) -> RouteProblem:
        obj = self.obj
        if not self.kube.custom_exists(
            REMOVED_REWRITE_GROUP, obj.version, obj.namespace, obj.plural, obj.name
        ):
            return super()._not_found()
        return RouteProblem(Reason.ROUTE_NOT_FOUND, removed_group_message(obj.namespace, obj.name))


def removed_group_message(namespace: str, name: str) -> str:
    """What a user whose rewrite is still of the removed group reads, and what to do."""
    return (
        f"InferenceModelRewrite {namespace}/{name} ({SPEC_FIELD}.name) is of "
        f"{REMOVED_REWRITE_GROUP}/{REWRITE_VERSION}, which the Gateway API Inference Extension removed "
        f"in v1.6.0 and modelgate no longer writes; create it as {REWRITE_GROUP}/{REWRITE_VERSION} "
        "(llm-d's InferenceModelRewrite, same spec), which llm-d's endpoint picker reads, and delete "
        "the old one"
    )


def model_rewrite_router(
    kube: Kube, namespace: str, routing: InferenceModelRewriteRouting, kinds: SideKinds
) -> TrafficRouter:
    assert kinds.adapters is not None, "spec validation gives this router two adapters of one pool"
    return ModelRewriteRouter(kube, namespace, routing, kinds.adapters)


def _named_routes(routing: InferenceModelRewriteRouting) -> list[RouteKey]:
    return [(MODEL_REWRITES, routing.name)]


def _backend_service(routing: InferenceModelRewriteRouting, side: SeriesSide) -> str:
    # Never asked: both sides are InferencePool sides, which have no Service (routers.backend_service).
    raise AssertionError(f"{SPEC_FIELD}: an adapter side has no Service")


MODEL_REWRITE = RouterKind(
    key="inferenceModelRewrite",
    config=InferenceModelRewriteRouting,
    resources=(RouteResource(REWRITE_GROUP, REWRITE_VERSION, MODEL_REWRITES),),
    named_routes=_named_routes,
    backend_service=_backend_service,
    factory=model_rewrite_router,
    what_it_writes="llm-d's InferenceModelRewrites: the targets (two adapters' weights) of a rule;"
    " the Inference Extension's removed ones only read by name, to refuse them",
    removed=(RouteResource(REMOVED_REWRITE_GROUP, REWRITE_VERSION, MODEL_REWRITES),),
)
