"""The inferenceModelRewrite router's patch of llm-d's InferenceModelRewrite, applied as the API server
would (RFC 6902): two adapters' target weights at each step, the target removed at 0 (the API forbids
weight 0) and put back, other rules and fields untouched, and what it refuses to write."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from modelgate.api.model_rewrite_routing import InferenceModelRewriteRouting
from modelgate.core import LiveRoute, Reason, RouteProblem
from modelgate.kube import NotFound
from modelgate.routers.base import AdapterSides
from modelgate.routers.model_rewrite import (
    MODEL_REWRITE,
    REMOVED_REWRITE_GROUP,
    REWRITE_GROUP,
    ModelRewriteRouter,
    RewriteTargets,
    locate_targets,
)

ADAPTERS = AdapterSides(pool="base", incumbent="chat-lora-v1", candidate="chat-lora-v2")
FOREIGN_RULE = {
    "matches": [{"model": {"type": "Exact", "value": "summarise"}}],
    "targets": [{"modelRewrite": "sum-lora-v3", "weight": 7}, {"modelRewrite": "sum-lora-v4", "weight": 3}],
}


def rewrite(*targets: dict[str, Any], pool: str = "base") -> dict[str, Any]:
    """InferenceModelRewrite serving/chat-adapters: someone else's rule 0, and rule 1 with `targets`."""
    return {
        "metadata": {"name": "chat-adapters", "namespace": "serving", "resourceVersion": "7"},
        "spec": {
            "poolRef": {"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": pool},
            "rules": [
                copy.deepcopy(FOREIGN_RULE),
                {"matches": [{"model": {"type": "Exact", "value": "chat"}}], "targets": list(targets)},
            ],
        },
    }


def target(adapter: str, weight: int | None = None) -> dict[str, Any]:
    return {"modelRewrite": adapter} if weight is None else {"modelRewrite": adapter, "weight": weight}


def located(obj: dict[str, Any]) -> RewriteTargets:
    found = locate_targets(obj, 1, ADAPTERS)
    assert isinstance(found, RewriteTargets), found
    return found


def written(obj: dict[str, Any], candidate_weight: int) -> dict[str, Any]:
    """The object after the router's patch for `candidate_weight`, read back as the router reads it."""
    ops = located(obj).patch("7", candidate_weight, 0)
    assert not isinstance(ops, RouteProblem), ops
    after: dict[str, Any] = jsonpatch.apply_patch(obj, ops)
    return after


def weights(obj: dict[str, Any]) -> dict[str, int]:
    return {t["modelRewrite"]: t["weight"] for t in obj["spec"]["rules"][1]["targets"]}


@pytest.mark.parametrize("candidate_weight", [10, 50, 100, 0])
def test_each_step_writes_the_two_weights_and_reads_back_as_written(candidate_weight: int) -> None:
    before = rewrite(target("chat-lora-v1", 100))
    after = written(before, candidate_weight)
    expected = {"chat-lora-v1": 100 - candidate_weight, "chat-lora-v2": candidate_weight}
    assert weights(after) == {adapter: w for adapter, w in expected.items() if w > 0}
    assert located(after).live() == LiveRoute(100 - candidate_weight, candidate_weight)
    # Every weight written is one the API allows (1..1,000,000), and someone else's rule is as it was.
    assert all(1 <= w <= 1_000_000 for w in weights(after).values())
    assert after["spec"]["rules"][0] == FOREIGN_RULE
    assert after["spec"]["poolRef"] == before["spec"]["poolRef"]


def test_a_target_removed_at_0_is_put_back_with_its_other_fields() -> None:
    at_100 = written(rewrite(target("chat-lora-v1", 50) | {"note": "kept"}, target("chat-lora-v2", 50)), 100)
    assert weights(at_100) == {"chat-lora-v2": 100}
    back = written(at_100, 10)
    assert weights(back) == {"chat-lora-v1": 90, "chat-lora-v2": 10}
    rolled_back = written(back, 0)
    assert rolled_back["spec"]["rules"][1]["targets"] == [{"modelRewrite": "chat-lora-v1", "weight": 100}]


def test_the_patch_applies_only_to_the_version_it_was_built_on() -> None:
    ops = located(rewrite(target("chat-lora-v1", 100))).patch("7", 50, 0)
    assert not isinstance(ops, RouteProblem)
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    newer = rewrite(target("chat-lora-v1", 100))
    newer["metadata"]["resourceVersion"] = "8"
    with pytest.raises(jsonpatch.JsonPatchTestFailed):
        jsonpatch.apply_patch(newer, ops)


@pytest.mark.parametrize(
    ("targets", "candidate_share"),
    [
        ((target("chat-lora-v1", 900), target("chat-lora-v2", 100)), 10),  # proportional, not percent
        ((target("chat-lora-v1"), target("chat-lora-v2")), 50),  # no weights: an equal split
        ((target("chat-lora-v2", 3),), 100),
    ],
)
def test_reads_weights_as_shares_of_the_rule(
    targets: tuple[dict[str, Any], ...], candidate_share: int
) -> None:
    assert located(rewrite(*targets)).live() == LiveRoute(100 - candidate_share, candidate_share)


@pytest.mark.parametrize(
    ("obj", "reason", "named"),
    [
        (
            rewrite(target("chat-lora-v1", 90), target("other-lora", 10)),
            Reason.BACKEND_AMBIGUOUS,
            "other-lora",
        ),
        (
            rewrite(target("chat-lora-v1", 90), target("chat-lora-v1", 10)),
            Reason.BACKEND_AMBIGUOUS,
            "2 targets",
        ),
        (rewrite(), Reason.BACKEND_NOT_FOUND, "spec.candidate.adapter"),
        (rewrite(target("chat-lora-v1", 1), pool="elsewhere"), Reason.BACKEND_NOT_FOUND, "elsewhere"),
    ],
)
def test_refuses_a_rule_whose_weights_it_cannot_move_alone(
    obj: dict[str, Any], reason: Reason, named: str
) -> None:
    found = locate_targets(obj, 1, ADAPTERS)
    assert isinstance(found, RouteProblem) and found.reason is reason
    assert named in found.message


def test_a_rule_index_past_the_rules_names_the_field() -> None:
    found = locate_targets(rewrite(target("chat-lora-v1", 1)), 2, ADAPTERS)
    assert isinstance(found, RouteProblem) and found.reason is Reason.RULE_NOT_FOUND
    assert "spec.trafficRouting.inferenceModelRewrite.ruleIndex" in found.message


def test_a_mirror_step_is_refused_with_nothing_written() -> None:
    refused = located(rewrite(target("chat-lora-v1", 100))).patch("7", 10, 20)
    assert isinstance(refused, RouteProblem) and refused.reason is Reason.WEIGHT_NOT_APPLIED


class RewritesByGroup:
    """Serves InferenceModelRewrites serving/* by API group: `stored[group][name]`."""

    def __init__(self, stored: dict[str, dict[str, dict[str, Any]]]) -> None:
        self.stored = stored
        self.asked: list[str] = []  # the groups read, in order

    def get_custom(self, group: str, version: str, namespace: str, plural: str, name: str, **_: Any) -> Any:
        self.asked.append(group)
        if name not in self.stored.get(group, {}):
            raise NotFound(404, f"{plural}.{group} {name} not found")
        return copy.deepcopy(self.stored[group][name])

    def custom_exists(self, group: str, version: str, namespace: str, plural: str, name: str) -> bool:
        self.asked.append(group)
        return name in self.stored.get(group, {})


def rewrite_router(kube: RewritesByGroup) -> ModelRewriteRouter:
    routing = InferenceModelRewriteRouting(name="chat-adapters", ruleIndex=1)
    return ModelRewriteRouter(kube, "serving", routing, ADAPTERS)  # type: ignore[arg-type]


def test_the_router_reads_and_writes_llm_ds_inference_model_rewrite() -> None:
    kube = RewritesByGroup({REWRITE_GROUP: {"chat-adapters": rewrite(target("chat-lora-v1", 100))}})
    assert rewrite_router(kube).read() == LiveRoute(100, 0)
    assert kube.asked == ["llm-d.ai"]  # the old group is not asked while llm-d's object is there
    assert MODEL_REWRITE.resources[0].group == "llm-d.ai"


def test_a_rewrite_of_the_removed_group_is_refused_naming_what_replaced_it() -> None:
    old = {REMOVED_REWRITE_GROUP: {"chat-adapters": rewrite(target("chat-lora-v1", 100))}}
    refused = rewrite_router(RewritesByGroup(old)).read()
    assert isinstance(refused, RouteProblem) and refused.reason is Reason.ROUTE_NOT_FOUND
    assert "llm-d.ai/v1alpha2" in refused.message
    assert "spec.trafficRouting.inferenceModelRewrite.name" in refused.message
    plain = rewrite_router(RewritesByGroup({})).read()
    assert isinstance(plain, RouteProblem) and plain.reason is Reason.ROUTE_NOT_FOUND
    assert REMOVED_REWRITE_GROUP not in plain.message


def test_the_removed_group_is_granted_a_read_by_name_only() -> None:
    rights = {(rule.api_group, rule.verbs) for rule in MODEL_REWRITE.rbac_rules}
    assert rights == {("llm-d.ai", ("get", "list", "watch", "patch")), (REMOVED_REWRITE_GROUP, ("get",))}
