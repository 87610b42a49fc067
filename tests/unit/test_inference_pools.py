"""InferencePool sides, the pure parts: the spec's rules, the pool's selector and availability, the
Pods' series (checked by Prometheus's own engine), the backendRef the router looks for, and the
bed's reading of which Pods a pool selects."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console

from modelgate.api import InvalidSpecError, parse_spec
from modelgate.api.traffic_routing import GatewayAPIRouting
from modelgate.cli.render.rollout import render_list, render_status
from modelgate.core import RouteProblem
from modelgate.kube.pools import (
    PoolPod,
    endpoint_picker_service,
    pool_availability,
    pool_label_selector,
    pool_pod,
)
from modelgate.metrics.context import pool_pod_regex
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.routers import SideKinds
from modelgate.routers.gatewayapi import BackendPair, locate_backends, route_targets
from testbed.inference_pools import inference_pool, selected_pods
from testbed.versions import REPO_ROOT
from tests.support.promql import assert_evaluates, one
from tests.unit.test_metrics_presets import CANDIDATE_PODS, SERIES

POOL_SPEC: dict[str, Any] = {
    "incumbent": {"inferencePool": "pool-v1"},
    "candidate": {"inferencePool": "pool-v2"},
    "trafficRouting": {
        "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "pool-v1", "candidateBackend": "pool-v2"}
    },
    "steps": [{"setWeight": 10}],
    "analysis": {
        "interval": "30s",
        "prometheus": {"address": "http://prometheus:9090"},
        "metrics": [{"name": "errors", "preset": "errorRate", "max": 0.01}],
    },
}
POOLS = SideKinds("InferencePool", "InferencePool")
(ROUTING,) = route_targets(
    GatewayAPIRouting(http_route="chat", incumbent_backend="pool-v1", candidate_backend="pool-v2")
)
INFERENCE_GROUP = "inference.networking.k8s.io"


def with_sides(**sides: dict[str, str]) -> dict[str, Any]:
    return {**POOL_SPEC, **sides}


def problems(spec: dict[str, Any]) -> tuple[str, ...]:
    with pytest.raises(InvalidSpecError) as refused:
        parse_spec(spec)
    return refused.value.problems


# -- the spec --------------------------------------------------------------------------------------
def test_a_pool_side_names_its_kind_and_field() -> None:
    spec = parse_spec(POOL_SPEC)
    assert (spec.candidate.kind, spec.candidate.name, spec.candidate.field) == (
        "InferencePool",
        "pool-v2",
        "inferencePool",
    )
    assert SideKinds.of(spec) == POOLS


def test_a_side_with_both_or_neither_is_refused_naming_it() -> None:
    both = with_sides(candidate={"inferencePool": "pool-v2", "deployment": "chat-v2"})
    assert problems(both) == ("spec.candidate: set exactly one of deployment, inferencePool or workload",)
    neither = with_sides(incumbent={"model": "llama"})
    assert problems(neither) == ("spec.incumbent: set exactly one of deployment, inferencePool or workload",)


def test_a_pool_side_whose_backend_is_not_the_pool_is_refused_naming_the_backend() -> None:
    spec = with_sides(candidate={"inferencePool": "pool-v3"})
    assert problems(spec) == (
        "spec.trafficRouting.gatewayAPI.candidateBackend: must be pool-v3, the InferencePool of "
        "spec.candidate.inferencePool",
    )


def test_a_deployment_and_a_pool_may_share_a_name() -> None:
    spec = with_sides(incumbent={"deployment": "pool-v2"})
    spec["trafficRouting"] = {
        "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "svc-v1", "candidateBackend": "pool-v2"}
    }
    assert SideKinds.of(parse_spec(spec)) == SideKinds("Deployment", "InferencePool")


# -- the pool and its Pods -------------------------------------------------------------------------
def pod(name: str, ready: bool = True, *, generate_name: str | None = None, deleting: bool = False) -> Any:
    meta: dict[str, Any] = {"name": name, "labels": {"app": "chat-v2", "tier": "gpu"}}
    if generate_name:
        meta["generateName"] = generate_name
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"conditions": [{"type": "Ready", "status": str(ready)}]}}


POOL = inference_pool("pool-v2", "serving", {"tier": "gpu", "app": "chat-v2"})


def test_the_selector_is_the_pools_match_labels() -> None:
    assert pool_label_selector(POOL) == "app=chat-v2,tier=gpu"


def test_the_endpoint_picker_is_the_service_the_pool_names() -> None:
    named = inference_pool("base", "serving", {"app": "chat"}, endpoint_picker="base-epp")
    assert endpoint_picker_service(named) == "base-epp"
    assert endpoint_picker_service(POOL) is None
    # Not a Service: no `service` label names it.
    ref = named["spec"]["endpointPickerRef"]
    other_kind = {**named, "spec": {**named["spec"], "endpointPickerRef": {**ref, "kind": "Endpoints"}}}
    assert endpoint_picker_service(other_kind) is None


def test_a_pod_being_deleted_is_not_the_pools() -> None:
    assert pool_pod(pod("a", deleting=True)) is None
    assert pool_pod(pod("a-1", generate_name="a-")) == PoolPod("a-1", "a-", True)
    assert pool_pod(pod("b", ready=False)) == PoolPod("b", None, False)


@pytest.mark.parametrize(
    ("pods", "available", "message"),
    [
        (None, False, "InferencePool x not found"),
        ([], False, "InferencePool x: it selects no Pods"),
        (
            [PoolPod("a", None, True), PoolPod("b", None, False)],
            False,
            "InferencePool x: 1 of 2 selected Pods Ready",
        ),
        (
            [PoolPod("a", None, True), PoolPod("b", None, True)],
            True,
            "InferencePool x: 2 of 2 selected Pods Ready",
        ),
    ],
)
def test_a_pool_is_available_when_it_selects_pods_and_all_are_ready(
    pods: list[PoolPod] | None, available: bool, message: str
) -> None:
    found = pool_availability("InferencePool x", pods)
    assert (found.exists, found.available, found.message) == (pods is not None, available, message)


# -- the Pods' series ------------------------------------------------------------------------------
def test_the_pod_regex_follows_owner_prefixes_and_names_the_rest() -> None:
    pods = [
        PoolPod("chat-v2-5c4b3a2f1-xyz12", "chat-v2-5c4b3a2f1-", True),
        PoolPod("chat-v2-5c4b3a2f1-uvw34", "chat-v2-5c4b3a2f1-", True),
        PoolPod("vllm.static-0", None, True),
    ]
    regex = pool_pod_regex("pool-v2", pods)
    assert regex == "(chat-v2-5c4b3a2f1-[a-z0-9]+|vllm[.]static-0)"
    matched = ["chat-v2-5c4b3a2f1-new99", "vllm.static-0"]
    unmatched = ["chat-v2-gpu-6b5a4c3d2-qrs56", "vllmxstatic-0", "chat-v2-7f6e5d4c3-abc12"]
    assert [name for name in matched + unmatched if re.fullmatch(regex, name)] == matched


def test_a_pool_without_pods_selects_no_series() -> None:
    regex = pool_pod_regex("pool-v2", [])
    assert regex == pool_pod_regex("pool-v2", None) == "InferencePool_pool-v2_selects_no_Pods"
    # Pod names are lowercase RFC 1123 subdomains: none can match.
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", regex) is None


def test_a_pool_sides_queries_measure_its_pods(tmp_path: Path) -> None:
    generate_name = CANDIDATE_PODS[0].rsplit("-", 1)[0] + "-"
    pods = [PoolPod(name, generate_name, True) for name in CANDIDATE_PODS]
    plan = analysis_plan(parse_spec(POOL_SPEC), "serving", {"candidate": pods, "incumbent": None})
    # As tests/unit/test_metrics_presets.py measures the candidate Deployment: 2 of 16 requests/s.
    assert_evaluates(tmp_path, SERIES, {plan.metrics["errors"].candidate: one(2 / 16)})


def test_a_pool_sides_own_pod_regex_wins() -> None:
    spec = with_sides(candidate={"inferencePool": "pool-v2", "podRegex": "vllm-[0-9]+"})
    plan = analysis_plan(parse_spec(spec), "serving", {})
    assert 'pod=~"vllm-[0-9]+"' in plan.metrics["errors"].candidate


# -- the backendRef --------------------------------------------------------------------------------
def route(*refs: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "chat", "namespace": "serving"},
        "spec": {"rules": [{"backendRefs": list(refs)}]},
    }


def pool_ref(name: str, weight: int) -> dict[str, Any]:
    return {"group": INFERENCE_GROUP, "kind": "InferencePool", "name": name, "weight": weight}


def test_a_pool_side_is_reached_through_its_inference_pool_backend_ref() -> None:
    found = locate_backends(route(pool_ref("pool-v1", 80), pool_ref("pool-v2", 20)), ROUTING, POOLS)
    assert found == BackendPair(0, 0, 1, 80, 20)


def test_a_service_where_a_pool_is_wanted_is_reported_naming_the_field() -> None:
    service = {"name": "pool-v2", "port": 8000, "weight": 20}
    problem = locate_backends(route(pool_ref("pool-v1", 80), service), ROUTING, POOLS)
    assert problem == RouteProblem(
        "BackendNotFound",
        "rule 0 of HTTPRoute serving/chat has no inference.networking.k8s.io/InferencePool backendRef named"
        " pool-v2 (spec.trafficRouting.gatewayAPI.candidateBackend); it has: pool-v1, pool-v2 (Service)",
    )


def test_a_pool_where_a_service_is_wanted_is_reported_naming_the_field() -> None:
    problem = locate_backends(route(pool_ref("pool-v1", 80), pool_ref("pool-v2", 20)), ROUTING)
    assert isinstance(problem, RouteProblem) and problem.reason == "BackendNotFound"
    assert "(spec.trafficRouting.gatewayAPI.incumbentBackend)" in problem.message
    assert problem.message.endswith(
        f"pool-v1 ({INFERENCE_GROUP}/InferencePool), pool-v2 ({INFERENCE_GROUP}/InferencePool)"
    )


# -- the bed's traffic driver ----------------------------------------------------------------------
def test_the_bed_sends_a_pools_share_to_the_ready_pods_it_selects() -> None:
    other = pod("chat-v1-a")
    other["metadata"]["labels"] = {"app": "chat-v1", "tier": "gpu"}
    pods = [pod("b"), pod("a"), pod("not-ready", ready=False), pod("going", deleting=True), other]
    assert selected_pods(POOL, pods) == ["a", "b"]


# -- the example -----------------------------------------------------------------------------------
def test_the_example_rolls_between_the_pools_its_route_splits() -> None:
    documents = list(
        yaml.safe_load_all((REPO_ROOT / "examples" / "rollout-inference-pools.yaml").read_text())
    )
    by_kind = {kind: [d for d in documents if d["kind"] == kind] for kind in ("InferencePool", "HTTPRoute")}
    (rollout,) = [d for d in documents if d["kind"] == "ModelRollout"]
    spec = parse_spec(rollout["spec"])
    (http_route,) = by_kind["HTTPRoute"]
    assert spec.traffic_routing.gateway_api is not None
    assert http_route["metadata"]["name"] == spec.traffic_routing.gateway_api.http_route
    (target,) = route_targets(spec.traffic_routing.gateway_api)
    assert locate_backends(http_route, target, SideKinds.of(spec)) == BackendPair(0, 0, 1, 100, 0)
    assert [p["metadata"]["name"] for p in by_kind["InferencePool"]] == [
        spec.incumbent.name,
        spec.candidate.name,
    ]


# -- the CLI -----------------------------------------------------------------------------------------
def test_the_cli_shows_a_pool_side_as_a_pool() -> None:
    body = {
        "metadata": {"namespace": "serving", "name": "chat"},
        "spec": POOL_SPEC,
        "status": {"currentWeight": 10},
    }
    console = Console(width=250, record=True)
    console.print(render_status(body))
    console.print(render_list([body], with_namespace=False))
    text = console.export_text()
    assert "pool/pool-v1 90% / pool/pool-v2 10%" in text
    (row,) = [line.split() for line in text.splitlines() if line.split()[:1] == ["chat"]]
    assert row[4:6] == ["pool/pool-v1", "pool/pool-v2"]


def test_the_pod_regex_does_not_grow_with_pods_named_by_hand() -> None:
    """The attack: 12 Pods without generateName pushed the regex past 256 characters, and the
    rollout went Failed with its weight where it was."""
    for count in (12, 50, 500):
        pods = [PoolPod(f"chat-v2-extra-{i}", None, True) for i in range(count)]
        pods.append(PoolPod("chat-v2-5c4b3a2f1-xyz12", "chat-v2-5c4b3a2f1-", True))
        regex = pool_pod_regex("pool-v2", pods)
        assert regex == "(chat-v2-5c4b3a2f1-[a-z0-9]+|chat-v2-extra-[a-z0-9]+)"
        assert all(re.fullmatch(regex, pod.name) for pod in pods)


def test_a_family_that_would_match_the_other_sides_pods_keeps_its_names() -> None:
    pods = [PoolPod("chat-0", None, True), PoolPod("chat-1", None, True)]
    regex = pool_pod_regex("pool-v2", pods, others={"chat-2", "chat-3"})
    assert regex == "(chat-0|chat-1)"
    assert pool_pod_regex("pool-v2", pods, others={"other-2"}) == "chat-[a-z0-9]+"
