"""Locating the two backends in an HTTPRoute dict, reading their weights, and building the weight
patch: pure functions, no API server."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from modelgate.api import GatewayAPIRouting
from modelgate.core import LiveRoute, RouteProblem
from modelgate.routers.gatewayapi import (
    GRPC_ROUTE,
    BackendPair,
    RouteTarget,
    backend_weight,
    locate_backends,
    route_targets,
)
from modelgate.routers.patched import weights_writer

(ROUTING,) = route_targets(
    GatewayAPIRouting(http_route="chat", incumbent_backend="chat-v1", candidate_backend="chat-v2")
)


def rules_writer(route: dict[str, Any]) -> str | None:
    return weights_writer(route, "rules")


def route(*rules: list[dict[str, Any]]) -> dict[str, Any]:
    """An HTTPRoute serving/chat whose rules have the given backendRefs."""
    return {
        "metadata": {"name": "chat", "namespace": "serving", "resourceVersion": "42"},
        "spec": {"rules": [{"backendRefs": refs} for refs in rules]},
    }


def ref(name: str, weight: int | None = None, **fields: str) -> dict[str, Any]:
    backend: dict[str, Any] = {"name": name, "port": 8000, **fields}
    if weight is not None:
        backend["weight"] = weight
    return backend


def test_locates_both_backends_among_others() -> None:
    found = locate_backends(route([ref("shadow", 0), ref("chat-v2", 30), ref("chat-v1", 70)]), ROUTING)
    assert found == BackendPair(
        rule_index=0, incumbent_index=2, candidate_index=1, incumbent_weight=70, candidate_weight=30
    )
    assert isinstance(found, BackendPair)
    assert found.live() == LiveRoute(incumbent_weight=70, candidate_weight=30)


def test_uses_the_rule_named_by_rule_index() -> None:
    routing = dataclasses.replace(ROUTING, rule_index=1)
    found = locate_backends(route([ref("other", 1)], [ref("chat-v1", 90), ref("chat-v2", 10)]), routing)
    assert isinstance(found, BackendPair)
    assert (found.rule_index, found.incumbent_index, found.candidate_index) == (1, 0, 1)


def test_absent_weight_reads_as_one() -> None:
    found = locate_backends(route([ref("chat-v1"), ref("chat-v2", 0)]), ROUTING)
    assert isinstance(found, BackendPair)
    assert found.live() == LiveRoute(incumbent_weight=1, candidate_weight=0)
    assert backend_weight({"name": "x", "weight": None}) == 1


def test_explicit_service_kind_and_core_group_match() -> None:
    refs = [ref("chat-v1", 50, kind="Service", group=""), ref("chat-v2", 50, namespace="serving")]
    assert isinstance(locate_backends(route(refs), ROUTING), BackendPair)


def test_missing_rule() -> None:
    routing = dataclasses.replace(ROUTING, rule_index=3)
    assert locate_backends(route([ref("chat-v1"), ref("chat-v2")]), routing) == RouteProblem(
        "RuleNotFound", "HTTPRoute serving/chat has 1 rule; spec.trafficRouting.gatewayAPI.ruleIndex is 3"
    )


def test_route_without_rules() -> None:
    problem = locate_backends({"metadata": {"name": "chat", "namespace": "serving"}, "spec": {}}, ROUTING)
    assert isinstance(problem, RouteProblem)
    assert problem.reason == "RuleNotFound"
    assert "has 0 rules" in problem.message


def test_missing_backend_lists_what_the_rule_has() -> None:
    routing = dataclasses.replace(ROUTING, candidate_backend="chat-v3")
    assert locate_backends(route([ref("chat-v1"), ref("chat-v2")]), routing) == RouteProblem(
        "BackendNotFound",
        "rule 0 of HTTPRoute serving/chat has no Service backendRef named chat-v3"
        " (spec.trafficRouting.gatewayAPI.candidateBackend); it has: chat-v1, chat-v2",
    )


def test_rule_without_backends() -> None:
    problem = locate_backends(route([]), ROUTING)
    assert isinstance(problem, RouteProblem)
    assert problem.reason == "BackendNotFound"
    assert problem.message.endswith("(spec.trafficRouting.gatewayAPI.incumbentBackend); it has: none")


@pytest.mark.parametrize(
    ("fields", "shown_as"),
    [
        (
            {"kind": "InferencePool", "group": "inference.networking.k8s.io"},
            "inference.networking.k8s.io/InferencePool",
        ),
        ({"kind": "Backend"}, "Backend"),
        ({"namespace": "elsewhere"}, "namespace elsewhere"),
    ],
)
def test_a_same_named_ref_that_is_not_a_local_service_does_not_count(
    fields: dict[str, str], shown_as: str
) -> None:
    problem = locate_backends(route([ref("chat-v1"), {**ref("chat-v2"), **fields}]), ROUTING)
    assert isinstance(problem, RouteProblem)
    assert problem.reason == "BackendNotFound"
    assert problem.message.endswith(f"it has: chat-v1, chat-v2 ({shown_as})")


def test_duplicate_backend_is_ambiguous() -> None:
    assert locate_backends(route([ref("chat-v1"), ref("chat-v2"), ref("chat-v1")]), ROUTING) == RouteProblem(
        "BackendAmbiguous",
        "rule 0 of HTTPRoute serving/chat has 2 backendRefs named chat-v1"
        " (spec.trafficRouting.gatewayAPI.incumbentBackend): backendRefs[0], backendRefs[2];"
        " keep one so that its weight is unambiguous",
    )


def test_weight_patch_tests_the_version_and_adds_both_weights() -> None:
    pair = BackendPair(
        rule_index=1, incumbent_index=2, candidate_index=0, incumbent_weight=1, candidate_weight=1
    )
    assert pair.patch("42", 25) == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
        {"op": "add", "path": "/spec/rules/1/backendRefs/2/weight", "value": 75},
        {"op": "add", "path": "/spec/rules/1/backendRefs/0/weight", "value": 25},
    ]


def managed(manager: str, time: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {
        "manager": manager,
        "operation": "Update",
        "time": time,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }


RULES = {"f:spec": {"f:rules": {}}}
LABELS = {"f:metadata": {"f:labels": {"f:app": {}}}}


def with_managers(*entries: dict[str, Any]) -> dict[str, Any]:
    owned = route([ref("chat-v1", 80), ref("chat-v2", 20)])
    owned["metadata"]["managedFields"] = list(entries)
    return owned


def test_the_rules_writer_is_the_latest_other_manager_that_owns_the_rules() -> None:
    written = with_managers(
        managed("kubectl-create", "2026-01-01T00:00:00Z", {**RULES, **LABELS}),
        managed("argocd-controller", "2026-01-01T00:05:00Z", RULES),
        managed("labeller", "2026-01-01T00:09:00Z", LABELS),
    )
    assert rules_writer(written) == "argocd-controller"


def test_no_other_writer_when_the_operator_owns_the_rules_or_nobody_says() -> None:
    ours = with_managers(
        managed("kubectl-create", "2026-01-01T00:00:00Z", LABELS),
        managed("modelgate", "2026-01-01T00:05:00Z", RULES),
    )
    assert rules_writer(ours) is None
    assert rules_writer(with_managers()) is None
    assert rules_writer(route([ref("chat-v1", 80), ref("chat-v2", 20)])) is None


def test_the_read_route_carries_its_other_writer() -> None:
    written = with_managers(managed("argocd-controller", "2026-01-01T00:05:00Z", RULES))
    found = locate_backends(written, ROUTING)
    assert isinstance(found, BackendPair)
    assert found.live(rules_writer(written)) == LiveRoute(80, 20, "argocd-controller")


def test_a_grpc_route_is_read_as_an_http_route_is() -> None:
    grpc = RouteTarget(
        GRPC_ROUTE, "chat", 3, "chat-v1", "chat-v2", "spec.trafficRouting.gatewayAPI.routes[1]"
    )
    assert locate_backends(route([ref("chat-v1"), ref("chat-v2")]), grpc) == RouteProblem(
        "RuleNotFound",
        "GRPCRoute serving/chat has 1 rule; spec.trafficRouting.gatewayAPI.routes[1].ruleIndex is 3",
    )


def test_every_named_rule_is_a_target_with_the_field_that_names_it() -> None:
    routing = GatewayAPIRouting.model_validate(
        {
            "routes": [{"httpRoute": "external"}, {"grpcRoute": "internal", "ruleIndex": 2}],
            "incumbentBackend": "chat-v1",
            "candidateBackend": "chat-v2",
        }
    )
    assert [(t.kind.kind, t.name, t.rule_index, t.field) for t in route_targets(routing)] == [
        ("HTTPRoute", "external", 0, "spec.trafficRouting.gatewayAPI.routes[0]"),
        ("GRPCRoute", "internal", 2, "spec.trafficRouting.gatewayAPI.routes[1]"),
    ]
