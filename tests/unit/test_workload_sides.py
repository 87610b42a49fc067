"""A side that is any workload (spec.<side>.workload), the pure parts: the spec's rules, its identity,
how a router reaches it, and the Pods its metric series are read from (checked by Prometheus's own
engine: a LeaderWorkerSet's leaders count, its workers do not)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from modelgate.api import parse_spec
from modelgate.kube.pools import PoolPod
from modelgate.metrics.promql_plan import analysis_plan, lists_pods
from modelgate.routers import SideKinds
from tests.support.promql import assert_evaluates, counter, one
from tests.unit.test_inference_pools import problems

LWS = "leaderworkerset.x-k8s.io/v1"


def workload(kind: str, name: str, api_version: str = LWS) -> dict[str, Any]:
    return {"workload": {"apiVersion": api_version, "kind": kind, "name": name}}


SPEC: dict[str, Any] = {
    "incumbent": workload("LeaderWorkerSet", "chat-v1"),
    "candidate": workload("LeaderWorkerSet", "chat-v2"),
    "trafficRouting": {
        "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}
    },
    "steps": [{"setWeight": 10}],
    "analysis": {
        "interval": "30s",
        "prometheus": {"address": "http://prometheus:9090"},
        "metrics": [{"name": "errors", "preset": "errorRate", "max": 0.01}],
    },
}


def with_sides(**sides: Any) -> dict[str, Any]:
    return {**SPEC, **sides}


# -- the spec --------------------------------------------------------------------------------------
def test_a_workload_side_names_its_kind_field_and_a_service_backend() -> None:
    spec = parse_spec(SPEC)
    candidate = spec.candidate
    assert (candidate.kind, candidate.name, candidate.field) == ("LeaderWorkerSet", "chat-v2", "workload")
    assert not candidate.is_deployment
    # Reached through a Service, as a Deployment is.
    assert SideKinds.of(spec) == SideKinds("Deployment", "Deployment")


def test_identity_keeps_a_deployments_name_and_adds_the_kind_of_any_other_workload() -> None:
    spec = parse_spec(with_sides(incumbent=workload("StatefulSet", "chat-v1", "apps/v1")))
    assert spec.candidate.identity == "leaderworkerset.leaderworkerset.x-k8s.io/chat-v2"
    assert spec.incumbent.identity == "statefulset.apps/chat-v1"
    # `deployment: x` and its long spelling are one Deployment, with the identity it always had.
    long = parse_spec(with_sides(candidate=workload("Deployment", "chat-v2", "apps/v1")))
    short = parse_spec(with_sides(candidate={"deployment": "chat-v2"}))
    assert long.candidate.identity == short.candidate.identity == "chat-v2"
    assert long.candidate.is_deployment and short.candidate.is_deployment
    assert long.candidate.object_ref == short.candidate.object_ref


def test_a_side_naming_two_workloads_is_refused() -> None:
    both = with_sides(candidate={**workload("StatefulSet", "x", "apps/v1"), "deployment": "chat-v2"})
    assert problems(both) == ("spec.candidate: set exactly one of deployment, inferencePool or workload",)


def test_an_inference_pool_named_as_a_workload_is_refused_naming_the_field() -> None:
    pool = with_sides(candidate=workload("InferencePool", "pool", "inference.networking.k8s.io/v1"))
    assert problems(pool) == (
        "spec.candidate.workload.kind: an InferencePool is not a workload: name it in inferencePool",
    )


def test_sides_of_one_kind_and_name_are_refused_however_they_are_spelled() -> None:
    same = with_sides(candidate=workload("LeaderWorkerSet", "chat-v1"))
    assert problems(same) == (
        "spec.candidate.workload: must differ from spec.incumbent.workload "
        "(both are LeaderWorkerSet chat-v1)",
    )
    spelled_apart = with_sides(
        incumbent={"deployment": "chat-v1"}, candidate=workload("Deployment", "chat-v1", "apps/v1")
    )
    assert problems(spelled_apart) == (
        "spec.candidate.workload: must differ from spec.incumbent.deployment (both are Deployment chat-v1)",
    )
    # Two kinds may share a name.
    parse_spec(with_sides(candidate=workload("StatefulSet", "chat-v1", "apps/v1")))


@pytest.mark.parametrize(
    "field",
    [
        {"apiVersion": "LWS/v1", "kind": "LeaderWorkerSet", "name": "x"},
        {"apiVersion": "apps/v1", "kind": "statefulSet", "name": "x"},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "X"},
    ],
)
def test_a_malformed_workload_reference_is_refused_naming_its_field(field: dict[str, str]) -> None:
    (problem,) = problems(with_sides(candidate={"workload": field}))
    assert problem.startswith("spec.candidate.workload.")


def test_scale_down_is_allowed_for_any_workload_and_refused_for_a_pool() -> None:
    watched = {**SPEC, "watch": {"duration": "1m", "scaleDownIncumbent": True}}
    assert parse_spec(watched).watch is not None
    pool = {
        **watched,
        "incumbent": {"inferencePool": "chat-v1"},
    }
    (problem,) = problems(pool)
    assert problem.startswith("spec.watch.scaleDownIncumbent: scaleDownIncumbent needs")


# -- the Pods its series are read from --------------------------------------------------------------
def requests(pod: str, status: str) -> str:
    return f'http_requests_total{{namespace="serving",pod="{pod}",status="{status}"}}'


def test_a_leaderworkersets_series_are_its_leaders_not_its_workers(tmp_path: Path) -> None:
    plan = analysis_plan(parse_spec(SPEC), "serving")
    series = {
        # Two groups of chat-v2: leaders chat-v2-0 and chat-v2-1 serve, 1 error in 10.
        requests("chat-v2-0", "200"): counter(4),
        requests("chat-v2-1", "200"): counter(5),
        requests("chat-v2-1", "500"): counter(1),
        # A worker's series (were it to export any) are not the side's.
        requests("chat-v2-0-1", "500"): counter(10),
        # Nor are another LeaderWorkerSet's whose name begins alike.
        requests("chat-v2-canary-0", "500"): counter(10),
    }
    assert_evaluates(tmp_path, series, {plan.metrics["errors"].candidate: one(0.1)})


def test_a_statefulsets_pods_are_its_ordinals_and_another_kinds_are_listed() -> None:
    spec = parse_spec(
        with_sides(
            incumbent=workload("StatefulSet", "chat-v1", "apps/v1"),
            candidate=workload("InferenceServer", "chat-v2", "serving.example.com/v1"),
        )
    )
    assert not lists_pods(spec.incumbent)
    assert lists_pods(spec.candidate)
    pods = {"candidate": [PoolPod("chat-v2-abcde", "chat-v2-", True)], "incumbent": None}
    plan = analysis_plan(spec, "serving", pods)
    drawn = plan.metrics["errors"]
    assert 'pod=~"chat-v2-[a-z0-9]+"' in drawn.candidate
    assert drawn.incumbent_drawn is not None and 'pod=~"chat-v1-[0-9]+"' in drawn.incumbent_drawn


def test_a_workload_that_selects_no_pods_names_itself_in_the_query() -> None:
    spec = parse_spec(with_sides(candidate=workload("InferenceServer", "chat-v2", "serving.example.com/v1")))
    plan = analysis_plan(spec, "serving", {"candidate": []})
    assert "InferenceServer_chat-v2_selects_no_Pods" in plan.metrics["errors"].candidate
