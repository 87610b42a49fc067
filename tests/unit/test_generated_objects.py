"""What a one-edit rollout generates from the incumbent: a candidate Deployment whose Pods neither
the incumbent's Deployment nor its Service select, owned by the rollout and free of the incumbent's
own labels; its Service; the patch applied once and recognised; and the backendRef edits."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from modelgate.api import parse_spec
from modelgate.api.candidate_patch import CandidatePatch
from modelgate.core import LiveRoute, Reason, RouteProblem
from modelgate.core.results import GeneratedChange
from modelgate.kube import KubeError
from modelgate.kube.generated_objects import (
    GENERATED_LABEL,
    candidate_deployment,
    candidate_service,
    carries_patch,
    owned_by,
    patched_container,
    patched_template_ops,
    with_model,
)
from modelgate.kube.generated_resources import APPS, SERVICES
from modelgate.kube.labels import MAX_LABEL_VALUE, ROLLOUT_LABEL, label_value
from modelgate.routers.base import SideKinds
from modelgate.routers.gatewayapi import HTTP_ROUTE, RouteTarget, locate_rule
from modelgate.routers.generated_candidate import GeneratedCandidate, backend_ref_patch

ROLLOUT = {"metadata": {"name": "chat", "namespace": "serving", "uid": "uid-1"}}
PATCH = CandidatePatch(image="vllm:2", env=[{"name": "MODE", "value": "fast"}], model="llama-3.1-8b")


def incumbent() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "chat-v1",
            "namespace": "serving",
            "resourceVersion": "7",
            "labels": {"app.kubernetes.io/instance": "argo-app"},
            "annotations": {"argocd.argoproj.io/tracking-id": "argo-app:apps/Deployment:serving/chat-v1"},
        },
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "chat"}},
            "template": {
                "metadata": {"labels": {"app": "chat", "tier": "model"}},
                "spec": {
                    "containers": [
                        {"name": "sidecar", "image": "proxy:1"},
                        {
                            "name": "server",
                            "image": "vllm:1",
                            "args": ["--model", "llama-3-8b", "--port", "8000"],
                            "env": [{"name": "MODE", "value": "slow"}, {"name": "KEEP", "value": "1"}],
                        },
                    ]
                },
            },
        },
    }


SERVICE = {
    "metadata": {"name": "chat-v1", "namespace": "serving"},
    "spec": {
        "type": "NodePort",
        "clusterIP": "10.0.0.9",
        "selector": {"tier": "model"},
        "ports": [{"port": 80, "targetPort": 8000, "nodePort": 30080}],
    },
}


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_the_candidates_pods_are_selected_by_neither_the_incumbents_deployment_nor_its_service() -> None:
    named = CandidatePatch(container="server", image="vllm:2")
    made = candidate_deployment(incumbent(), SERVICE["spec"]["selector"], named, "chat-v1-abc", ROLLOUT)
    assert isinstance(made, dict)
    labels = made["spec"]["template"]["metadata"]["labels"]
    assert not selects({"app": "chat"}, labels) and not selects({"tier": "model"}, labels)
    assert selects(made["spec"]["selector"]["matchLabels"], labels)
    service = candidate_service(SERVICE, "chat-v1-abc", ROLLOUT)
    assert selects(service["spec"]["selector"], labels)
    assert "nodePort" not in service["spec"]["ports"][0] and "clusterIP" not in service["spec"]


def test_generated_objects_are_the_rollouts_and_carry_nothing_of_argo_cds_tracking() -> None:
    made = candidate_deployment(incumbent(), {}, PATCH, "chat-v1-abc", ROLLOUT)
    assert isinstance(made, dict)
    for obj in (made, candidate_service(SERVICE, "chat-v1-abc", ROLLOUT)):
        assert owned_by(obj, "uid-1")
        assert "annotations" not in obj["metadata"]
        assert "app.kubernetes.io/instance" not in obj["metadata"]["labels"]
        assert obj["metadata"]["labels"][GENERATED_LABEL] == "chat-v1-abc"


def test_a_rollout_name_longer_than_a_label_value_is_labelled_by_its_cut_and_hash() -> None:
    """A ModelRollout's name may have 253 characters, a label value 63: the API server refused
    every generated object of a long-named rollout."""
    named = {"metadata": {**ROLLOUT["metadata"], "name": "chat-" + "x" * 248}}
    made = candidate_deployment(incumbent(), {}, PATCH, "chat-v1-abc", named)
    labels = made["metadata"]["labels"]
    assert labels[ROLLOUT_LABEL] == label_value(named["metadata"]["name"])
    assert all(len(value) <= MAX_LABEL_VALUE for value in labels.values()), labels


def test_the_patch_goes_to_the_named_container_or_the_first() -> None:
    named = CandidatePatch(container="server", image="vllm:2")
    made = candidate_deployment(incumbent(), {}, named, "c", ROLLOUT)
    assert isinstance(made, dict)
    images = [c["image"] for c in made["spec"]["template"]["spec"]["containers"]]
    assert images == ["proxy:1", "vllm:2"]
    first = candidate_deployment(incumbent(), {}, CandidatePatch(image="vllm:2"), "c", ROLLOUT)
    assert isinstance(first, dict) and first["spec"]["template"]["spec"]["containers"][0]["image"] == "vllm:2"
    missing = candidate_deployment(incumbent(), {}, CandidatePatch(container="gpu", image="x"), "c", ROLLOUT)
    assert isinstance(missing, str) and "spec.candidatePatch.container" in missing


def test_a_container_takes_the_patch_once() -> None:
    server = incumbent()["spec"]["template"]["spec"]["containers"][1]
    patched = patched_container(server, PATCH)
    assert patched["image"] == "vllm:2"
    assert patched["args"] == ["--model", "llama-3.1-8b", "--port", "8000"]
    assert patched["env"] == [{"name": "KEEP", "value": "1"}, {"name": "MODE", "value": "fast"}]
    assert patched_container(patched, PATCH) == patched
    assert with_model(["--model=a"], "b") == ["--model=b"] and with_model([], "b") == ["--model", "b"]


def test_the_incumbent_is_recognised_once_it_carries_the_patch() -> None:
    named = CandidatePatch(container="server", image="vllm:2")
    deployment = incumbent()
    assert not carries_patch(deployment, named)
    operations = patched_template_ops(deployment, named)
    assert isinstance(operations, list) and operations[0]["value"] == "7"  # guarded by its version
    deployment["spec"]["template"]["spec"]["containers"][1] = operations[1]["value"]
    assert carries_patch(deployment, named)


TARGET = RouteTarget(HTTP_ROUTE, "chat", 0, "chat-v1", "chat-v1-abc")


def route(*refs: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": "3"}, "spec": {"rules": [{"backendRefs": list(refs)}]}}


def apply_patch(obj: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """The few JSON patch operations backend_ref_patch makes, applied after their tests hold."""
    out = copy.deepcopy(obj)
    refs = out["spec"]["rules"][0]["backendRefs"]
    for op in operations:
        if op["op"] == "test":
            continue
        if op["op"] == "add":
            refs.append(op["value"])
        else:
            del refs[int(op["path"].rsplit("/", 1)[1])]
    return out


def test_the_candidates_backend_ref_is_added_at_weight_zero_and_removed_by_name() -> None:
    before = route({"name": "chat-v1", "port": 80, "weight": 100})
    added = backend_ref_patch(before, TARGET, present=True)
    assert added is not None and added[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "3"}
    after = apply_patch(before, added)
    assert after["spec"]["rules"][0]["backendRefs"][1] == {"name": "chat-v1-abc", "port": 80, "weight": 0}
    assert backend_ref_patch(after, TARGET, present=True) is None  # there already
    removed = backend_ref_patch(after, TARGET, present=False)
    assert removed is not None and apply_patch(after, removed) == before
    assert backend_ref_patch(before, TARGET, present=False) is None


def test_a_generated_candidate_without_its_backend_ref_gets_nothing() -> None:
    without = route({"name": "chat-v1", "port": 80, "weight": 100})
    generated = SideKinds(generated=True)
    located = locate_rule(without, TARGET, generated)
    assert not isinstance(located, RouteProblem) and located.live() == LiveRoute(100, 0)
    only_incumbent = located.patch("3", 0, 0)
    assert isinstance(only_incumbent, list) and [op["path"] for op in only_incumbent[1:]] == [
        "/spec/rules/0/backendRefs/0/weight"
    ]
    assert isinstance(located.patch("3", 10, 0), RouteProblem)
    named = locate_rule(without, TARGET)  # a candidate the user names must be in the route
    assert isinstance(named, RouteProblem) and named.reason is Reason.BACKEND_NOT_FOUND


class ForbiddenKube:
    """A cluster where the operator may read but not write Deployments (oneEdit.enabled off)."""

    def generated_deployments(self, namespace: str, label_selector: str) -> list[str]:
        return []

    def read_whole(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        return incumbent() if kind == APPS else SERVICE

    def create_generated(self, kind: str, body: dict[str, Any]) -> bool:
        raise KubeError(403, 'deployments.apps is forbidden: cannot create resource "deployments"')

    def get_custom(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise KubeError(403, 'httproutes is forbidden: cannot get resource "httproutes"')


def test_a_change_the_operator_may_not_make_is_a_warning_but_a_removal_raises() -> None:
    spec = parse_spec(
        {
            "incumbent": {"deployment": "chat-v1"},
            "candidatePatch": {"image": "vllm:2"},
            "trafficRouting": {"gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1"}},
            "steps": [{"setWeight": 10}],
        }
    )
    generated = GeneratedCandidate(ForbiddenKube(), ROLLOUT, spec)  # type: ignore[arg-type]
    said = generated.apply(GeneratedChange.CREATE)
    assert said.reason is Reason.GENERATION_FAILED and "oneEdit.enabled" in said.message
    with pytest.raises(KubeError):  # a deletion keeps its finalizer until the removal is done
        generated.apply(GeneratedChange.REMOVE)


class SquattedKube(ForbiddenKube):
    """A cluster where a Service of the generated name exists already, made by someone else."""

    def read_whole(self, kind: str, namespace: str, name: str) -> dict[str, Any]:
        if name == "chat-v1":
            return incumbent() if kind == APPS else SERVICE
        owner = [] if kind == SERVICES else [{"uid": ROLLOUT["metadata"]["uid"], "controller": True}]
        return {"metadata": {"name": name, "ownerReferences": owner}}

    def create_generated(self, kind: str, body: dict[str, Any]) -> bool:
        return kind == APPS  # the Deployment is made; the Service's name is taken

    def get_custom(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise AssertionError("the route must not be touched for someone else's Service")


def test_a_service_of_the_generated_name_that_is_not_the_rollouts_is_never_routed_to() -> None:
    spec = parse_spec(
        {
            "incumbent": {"deployment": "chat-v1"},
            "candidatePatch": {"image": "vllm:2"},
            "trafficRouting": {"gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1"}},
            "steps": [{"setWeight": 10}],
        }
    )
    generated = GeneratedCandidate(SquattedKube(), ROLLOUT, spec)  # type: ignore[arg-type]
    said = generated.apply(GeneratedChange.CREATE)
    assert said.reason is Reason.GENERATION_FAILED and "is not this rollout's" in said.message


class RouteWithoutIncumbentKube(SquattedKube):
    """The route's rule names no backendRef of the incumbent's Service to add the candidate beside."""

    def create_generated(self, kind: str, body: dict[str, Any]) -> bool:
        return True

    def get_custom(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return route({"name": "someone-else", "port": 80, "weight": 100})


def test_a_candidate_the_route_cannot_take_is_a_warning_naming_the_incumbent_backend() -> None:
    """It was "generated the candidate ... at weight 0" each tick, with no backendRef added."""
    spec = parse_spec(
        {
            "incumbent": {"deployment": "chat-v1"},
            "candidatePatch": {"image": "vllm:2"},
            "trafficRouting": {"gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1"}},
            "steps": [{"setWeight": 10}],
        }
    )
    said = GeneratedCandidate(RouteWithoutIncumbentKube(), ROLLOUT, spec).apply(  # type: ignore[arg-type]
        GeneratedChange.CREATE
    )
    assert said.reason is Reason.GENERATION_FAILED and "incumbentBackend" in said.message, said
