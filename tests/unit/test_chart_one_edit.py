"""The chart's one-edit values: no right to write a Deployment or Service unless oneEdit.enabled, and
then an admission policy that holds a candidatePatch to the requester's own Deployment rights."""

from __future__ import annotations

from tests.unit.test_chart import Object, of_kind, render, rules

ONE_EDIT = {"oneEdit": {"enabled": True}}
NAMESPACES = {"rbac": {"scope": "namespaces"}, "watchNamespaces": ["team-a"], **ONE_EDIT}


def writes(objects: list[Object], resource: str) -> set[str]:
    return {
        verb
        for _, rule in rules(objects)
        if resource in rule["resources"]
        for verb in rule["verbs"]
        if verb in ("create", "patch", "delete")
    }


def one_edit_policies(objects: list[Object], kind: str) -> list[Object]:
    return [p for p in of_kind(objects, kind) if p["metadata"]["name"].endswith("-one-edit-deployments")]


def test_by_default_the_operator_writes_no_deployment_or_service_and_no_policy_is_rendered() -> None:
    objects = render()
    assert writes(objects, "deployments") == set() and writes(objects, "services") == set()
    assert one_edit_policies(objects, "ValidatingAdmissionPolicy") == []


def test_enabled_the_operator_may_generate_and_a_tenant_needs_deployment_rights_to_ask() -> None:
    objects = render(ONE_EDIT)
    assert writes(objects, "deployments") == {"create", "patch", "delete"}
    assert writes(objects, "services") == {"create", "patch", "delete"}
    (policy,) = one_edit_policies(objects, "ValidatingAdmissionPolicy")
    (binding,) = one_edit_policies(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    (validation,) = policy["spec"]["validations"]
    assert "check('create')" in validation["expression"] and "check('patch')" in validation["expression"]
    assert "resource('deployments')" in policy["spec"]["variables"][0]["expression"]
    conditions = {c["name"]: c["expression"] for c in policy["spec"]["matchConditions"]}
    assert "has(object.spec.candidatePatch)" in conditions["has-a-candidate-patch"]


def test_in_namespaces_scope_the_policy_binds_only_the_watched_namespaces() -> None:
    (binding,) = one_edit_policies(render(NAMESPACES), "ValidatingAdmissionPolicyBinding")
    (expression,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert expression["values"] == ["team-a"]


def test_the_policy_can_be_turned_off_while_the_rights_stay() -> None:
    objects = render({"oneEdit": {"enabled": True, "requireDeploymentRights": False}})
    assert one_edit_policies(objects, "ValidatingAdmissionPolicy") == []
    assert "create" in writes(objects, "deployments")
