"""A rollout's spec resolved with its policy (api/policy_resolution.py): a section the rollout sets
replaces the policy's whole, a section it leaves out is the policy's, and every problem names the
field and, where the policy supplied it, the policy."""

from __future__ import annotations

from typing import Any

import pytest

from modelgate.api import InvalidSpecError, parse_spec
from modelgate.api.policy_ref import PolicyKind, PolicyRef
from modelgate.api.policy_resolution import PolicyProblem, parse_policy_spec, plan_hash, resolve
from modelgate.api.rollout_policy import ModelRolloutPolicySpec

CLUSTER_REF = PolicyRef(kind=PolicyKind.CLUSTER, name="vllm-gateway")
NAMESPACED_REF = PolicyRef(kind=PolicyKind.NAMESPACED, name="team-defaults")
ANALYSIS = {
    "interval": "30s",
    "prometheus": {"address": "http://prometheus.monitoring:9090"},
    "metrics": [
        {"name": "error-rate", "preset": "errorRate", "max": 0.01},
        {"name": "p99-latency", "preset": "latencyP99", "max": 2.5},
    ],
}
POLICY: dict[str, Any] = {
    "steps": [{"setWeight": 10}, {"pause": {"duration": "1m"}}, {"setWeight": 50}],
    "analysis": ANALYSIS,
    "rollback": {"onPrometheusError": "rollback", "maxConsecutiveErrors": 5},
}


def own_spec(**sections: Any) -> dict[str, Any]:
    """A rollout's spec as written: the sides and the route, the policy named, and `sections`."""
    return {
        "incumbent": {"deployment": "chat-v1"},
        "candidate": {"deployment": "chat-v2"},
        "trafficRouting": {
            "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}
        },
        "policyRef": {"kind": "ClusterModelRolloutPolicy", "name": "vllm-gateway"},
        **sections,
    }


def policy(**sections: Any) -> ModelRolloutPolicySpec:
    return ModelRolloutPolicySpec.model_validate(sections)


def problems_of(raised: pytest.ExceptionInfo[PolicyProblem]) -> tuple[str, ...]:
    return raised.value.problems


def test_a_rollout_without_sections_takes_every_section_of_its_policy() -> None:
    resolved = resolve(own_spec(), policy(**POLICY), CLUSTER_REF, "team-a")
    assert [step.set_weight for step in resolved.steps] == [10, None, 50]
    assert resolved.analysis is not None
    assert [metric.name for metric in resolved.analysis.metrics] == ["error-rate", "p99-latency"]
    assert resolved.rollback.max_consecutive_errors == 5
    assert resolved.policy_ref == CLUSTER_REF


def test_a_section_the_rollout_sets_replaces_the_policys_whole() -> None:
    """Per section, not per metric: the rollout's analysis has one metric, so the plan has one."""
    mine = {**ANALYSIS, "metrics": [{"name": "error-rate", "preset": "errorRate", "max": 0.05}]}
    resolved = resolve(own_spec(analysis=mine), policy(**POLICY), CLUSTER_REF, "team-a")
    assert resolved.analysis is not None
    assert [(metric.name, metric.max) for metric in resolved.analysis.metrics] == [("error-rate", 0.05)]
    assert [step.set_weight for step in resolved.steps] == [10, None, 50]  # the rest is the policy's


def test_the_rollouts_rollback_replaces_the_policys_and_its_absence_takes_it() -> None:
    mine = resolve(own_spec(rollback={"maxConsecutiveErrors": 2}), policy(**POLICY), CLUSTER_REF, "a")
    assert mine.rollback.max_consecutive_errors == 2
    assert str(mine.rollback.on_prometheus_error) != "rollback"  # not merged field by field
    theirs = resolve(own_spec(), policy(**POLICY), CLUSTER_REF, "a")
    assert str(theirs.rollback.on_prometheus_error) == "rollback"


def test_the_same_plan_has_the_same_hash_whichever_object_holds_it() -> None:
    inline = parse_spec({k: v for k, v in own_spec(**POLICY).items() if k != "policyRef"})
    resolved = resolve(own_spec(), policy(**POLICY), CLUSTER_REF, "team-a")
    assert plan_hash(resolved) == plan_hash(inline)
    other = resolve(own_spec(steps=[{"setWeight": 20}]), policy(**POLICY), CLUSTER_REF, "team-a")
    assert plan_hash(other) != plan_hash(resolved)


def test_steps_set_nowhere_are_named_with_the_policy() -> None:
    without_steps = {k: v for k, v in POLICY.items() if k != "steps"}
    with pytest.raises(PolicyProblem) as raised:
        resolve(own_spec(), policy(**without_steps), NAMESPACED_REF, "team-a")
    assert [p.split(":")[0] for p in problems_of(raised)] == ["spec.steps"]
    assert "spec.policyRef: ModelRolloutPolicy team-defaults in namespace team-a" in str(raised.value)


def test_a_problem_from_the_policys_section_says_it_came_from_the_policy() -> None:
    """The policy's watch window needs an analysis neither object has."""
    watch_only = {"steps": POLICY["steps"], "watch": {"duration": "5m"}}
    with pytest.raises(PolicyProblem) as raised:
        resolve(own_spec(), policy(**watch_only), CLUSTER_REF, "team-a")
    (problem,) = problems_of(raised)
    assert problem.startswith("spec.watch:")
    assert problem.endswith("(spec.watch from the policy)")
    assert "ClusterModelRolloutPolicy vllm-gateway" in str(raised.value)


def test_a_problem_across_sections_names_the_field_of_the_rollout() -> None:
    """The rollout's gate starts past the policy's last step: the field is the rollout's own."""
    check = {"name": "quality", "job": {"image": "registry.invalid/check:1"}, "policy": {"minScore": 0.7}}
    gate = {"checks": [check], "full": {"allowed": True, "startAtStep": 7}}
    with pytest.raises(PolicyProblem) as raised:
        resolve(own_spec(gate=gate), policy(**POLICY), CLUSTER_REF, "team-a")
    assert [p.split(":")[0] for p in problems_of(raised)] == ["spec.gate.full.startAtStep"]


def test_a_bad_policy_spec_names_the_policys_field() -> None:
    with pytest.raises(PolicyProblem) as raised:
        parse_policy_spec({"steps": [{"setWeight": 150}]}, CLUSTER_REF, "team-a")
    (problem,) = problems_of(raised)
    assert problem.startswith("the policy's spec.steps[0].setWeight:")


def test_steps_are_required_without_a_policy_and_optional_with_one() -> None:
    bare = {k: v for k, v in own_spec().items() if k != "policyRef"}
    with pytest.raises(InvalidSpecError) as raised:
        parse_spec(bare)
    assert [p.split(":")[0] for p in raised.value.problems] == ["spec.steps"]
    assert parse_spec(own_spec()).steps == ()


def test_a_watch_window_may_take_its_analysis_from_the_policy() -> None:
    spec = own_spec(watch={"duration": "5m"})
    assert parse_spec(spec).watch is not None  # the rollout alone is not judged without its policy
    resolved = resolve(spec, policy(**POLICY), CLUSTER_REF, "team-a")
    assert resolved.watch is not None and resolved.analysis is not None
