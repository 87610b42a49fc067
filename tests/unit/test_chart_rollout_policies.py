"""The chart's rollout policies: the ClusterModelRolloutPolicy it ships (a valid plan of real
presets), and who may read and write the two kinds (tenants: namespaced policies through the
built-in roles, cluster policies read-only; the platform: the writer role)."""

from __future__ import annotations

from modelgate.api.policy_ref import PolicyKind, PolicyRef
from modelgate.api.policy_resolution import parse_policy_spec, resolve
from modelgate.metrics.presets.catalog import PRESETS
from tests.unit.test_chart import COMBINATIONS, Object, of_kind, render
from tests.unit.test_policy_resolution import own_spec

WRITES = {"create", "update", "patch", "delete"}


def grants(objects: list[Object], name_suffix: str) -> set[tuple[str, str]]:
    """(resource, verb) of the ClusterRole whose name ends with `name_suffix`."""
    (role,) = [r for r in of_kind(objects, "ClusterRole") if r["metadata"]["name"].endswith(name_suffix)]
    return {
        (resource, verb) for rule in role["rules"] for resource in rule["resources"] for verb in rule["verbs"]
    }


def shipped_policy(objects: list[Object]) -> Object:
    (policy,) = of_kind(objects, "ClusterModelRolloutPolicy")
    return policy


def test_the_shipped_policy_is_a_valid_plan_of_real_presets() -> None:
    policy = shipped_policy(render())
    ref = PolicyRef(kind=PolicyKind.CLUSTER, name=policy["metadata"]["name"])
    spec = parse_policy_spec(policy["spec"], ref, "")
    assert spec.analysis is not None and spec.steps
    assert all(metric.preset in PRESETS for metric in spec.analysis.metrics)
    assert spec.analysis.source == "vllm"
    # A rollout of two Deployments behind a Gateway naming it, and nothing else, has a whole plan.
    resolved = resolve(own_spec(), spec, ref, "team-a")
    assert resolved.steps == spec.steps and resolved.analysis == spec.analysis


def test_the_shipped_policy_follows_its_values_and_is_created_after_the_crd() -> None:
    values = {
        "rolloutPolicies": {"defaultPolicy": {"create": True, "name": "ours", "prometheus": "http://p:9090"}}
    }
    policy = shipped_policy(render(values))
    assert policy["metadata"]["name"] == "ours"
    assert policy["spec"]["analysis"]["prometheus"]["address"] == "http://p:9090"
    assert "post-install" in policy["metadata"]["annotations"]["helm.sh/hook"]
    assert not of_kind(render(COMBINATIONS["rollout policies"]), "ClusterModelRolloutPolicy")


def test_tenants_write_namespaced_policies_and_only_read_cluster_ones() -> None:
    objects = render()
    edit = grants(objects, "-policy-edit")
    assert {verb for resource, verb in edit if resource == "modelrolloutpolicies"} >= WRITES
    assert grants(objects, "-policy-view") == {("modelrolloutpolicies", v) for v in ("get", "list", "watch")}
    reader = grants(objects, "-cluster-policy-reader")
    assert reader == {("clustermodelrolloutpolicies", v) for v in ("get", "list", "watch")}
    (binding,) = [
        b for b in of_kind(objects, "ClusterRoleBinding") if b["roleRef"]["name"].endswith("-reader")
    ]
    assert [s["name"] for s in binding["subjects"]] == ["system:authenticated"]
    # Of every role the chart makes, only the writer's writes cluster policies.
    for role in of_kind(objects, "ClusterRole"):
        writes = {
            v
            for rule in role["rules"]
            if "clustermodelrolloutpolicies" in rule["resources"]
            for v in rule["verbs"]
        }
        assert not writes & WRITES or role["metadata"]["name"].endswith("-cluster-policy-writer"), role


def test_the_edit_and_view_roles_aggregate_into_the_built_in_ones() -> None:
    labels = {r["metadata"]["name"]: r["metadata"]["labels"] for r in of_kind(render(), "ClusterRole")}
    assert labels["mg-modelgate-policy-edit"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert labels["mg-modelgate-policy-view"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"


def test_the_platform_teams_writers_are_bound_to_the_writer_role() -> None:
    objects = render(COMBINATIONS["rollout policies"])
    (binding,) = [
        b for b in of_kind(objects, "ClusterRoleBinding") if b["roleRef"]["name"].endswith("-writer")
    ]
    assert [s["name"] for s in binding["subjects"]] == ["platform"]
    names = {r["metadata"]["name"] for r in of_kind(objects, "ClusterRole")}
    assert "mg-modelgate-policy-edit" not in names and "mg-modelgate-cluster-policy-reader" not in names
