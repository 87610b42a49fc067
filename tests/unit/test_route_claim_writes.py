"""A route rule's claim (routers/claims.py): written with the weights, read back as the rule's owners,
and never written over another rollout's claim that the tick did not decide on. The API server's own
handling of the patch is proven on the bed (tests/cluster/test_route_ownership.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelgate.api import RolloutRef
from modelgate.kube import Conflict, PatchNotApplied
from modelgate.routers.claims import claim_keys, claim_patch, owners
from modelgate.routers.gatewayapi import HTTP_ROUTE, GatewayAPIRouter, RouteTarget
from testbed.manifests import http_route

MINE = RolloutRef(namespace="serving", name="chat", uid="uid-mine")
OLDER = RolloutRef(namespace="serving", name="chat-older", uid="uid-older")
RULE_0 = claim_keys("rules", [0])[0]
TARGET = RouteTarget(HTTP_ROUTE, "chat", 0, "chat-v1", "chat-v2")


def route(claimed_by: RolloutRef | None = None, version: str = "7") -> dict[str, Any]:
    obj = http_route("chat", "serving", {"chat-v1": 100, "chat-v2": 0})
    obj["metadata"]["resourceVersion"] = version
    if claimed_by is not None:
        obj["metadata"]["annotations"] = {RULE_0: claimed_by.model_dump_json(), "team": "chat"}
    return obj


class RecordingKube:
    """Serves one route (`served`, changed by the test between calls) and records the patches."""

    def __init__(self, served: dict[str, Any]) -> None:
        self.served = served
        self.patches: list[list[dict[str, Any]]] = []

    def get_custom(self, *_: Any, **__: Any) -> dict[str, Any]:
        return copy.deepcopy(self.served)

    def json_patch_custom(self, *args: Any, **_: Any) -> dict[str, Any]:
        operations = args[5]  # group, version, namespace, plural, name, operations
        if operations[0]["value"] != self.served["metadata"]["resourceVersion"]:
            raise PatchNotApplied(422, "the resourceVersion test failed")
        self.patches.append(operations)
        return copy.deepcopy(self.served)


def router(kube: RecordingKube) -> GatewayAPIRouter:
    return GatewayAPIRouter(kube, "serving", TARGET)  # type: ignore[arg-type]


def test_a_claim_is_read_from_the_rules_annotation() -> None:
    assert owners(route(OLDER), [RULE_0]) == {OLDER}
    assert owners(route(), [RULE_0]) == frozenset()
    hand_edited = route()
    hand_edited["metadata"]["annotations"] = {RULE_0: "chat-older"}
    assert owners(hand_edited, [RULE_0]) == frozenset()  # names no rollout: no claim


def test_the_first_claim_adds_the_annotations_and_a_held_claim_adds_nothing() -> None:
    ops = claim_patch(route(), [RULE_0], MINE)
    assert ops[0] == {"op": "add", "path": "/metadata/annotations", "value": {}}
    assert ops[1]["path"] == "/metadata/annotations/" + RULE_0.replace("/", "~1")
    assert RolloutRef.model_validate_json(ops[1]["value"]) == MINE
    assert claim_patch(route(MINE), [RULE_0], MINE) == []


def test_a_write_claims_the_rule_in_the_same_patch_as_the_weights() -> None:
    kube = RecordingKube(route())
    written = router(kube)
    written.read()

    written.set_weights(20, owner=MINE)

    (patch,) = kube.patches
    assert patch[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    claims = [op for op in patch if op["path"].startswith("/metadata/annotations/")]
    assert [RolloutRef.model_validate_json(op["value"]) for op in claims] == [MINE]


def test_a_claim_that_came_after_the_read_is_not_written_over() -> None:
    kube = RecordingKube(route())
    claimed_late = router(kube)
    claimed_late.read()
    kube.served = route(OLDER, version="8")  # claimed between the read and the write

    with pytest.raises(Conflict):
        claimed_late.set_weights(20, owner=MINE)
    assert kube.patches == []


def test_a_claim_the_tick_read_is_taken_over_and_no_other_annotation_is_touched() -> None:
    kube = RecordingKube(route(OLDER))
    taking_over = router(kube)
    assert taking_over.read().owners == {OLDER}  # type: ignore[union-attr]

    taking_over.set_weights(20, owner=MINE)

    (patch,) = kube.patches
    annotation_ops = [op for op in patch if op["path"].startswith("/metadata/annotations")]
    assert [op["path"] for op in annotation_ops] == ["/metadata/annotations/" + RULE_0.replace("/", "~1")]


def test_a_write_that_read_nothing_never_replaces_a_claim() -> None:
    """As a rollout whose spec cannot be used writes its 0 without a read (reconciler._unusable)."""
    with pytest.raises(Conflict):
        router(RecordingKube(route(OLDER))).set_weights(0, owner=MINE)
