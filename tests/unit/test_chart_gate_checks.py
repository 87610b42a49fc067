"""The chart's gate values: the policy the operator's check Pods follow (read back with the
operator's own parser), the admission policy for custom images, the check ServiceAccounts, and
Job rights narrowed to chosen namespaces."""

from __future__ import annotations

import re

from modelgate.kube.check_pod_policy import CheckPodPolicy
from tests.unit.test_chart import COMBINATIONS, Object, container, of_kind, render, render_error, rules

# The policies each Secret read on a requester's behalf needs (tests/cluster/test_gate_admission.py
# and test_secret_redirects.py), rendered by default.
SECRET_POLICIES = ("-storage-secrets", "-secret-redirects")


def custom_images(policies: list[Object]) -> list[Object]:
    """The custom-image policy or binding, not the Secrets' ones."""
    return [p for p in policies if not p["metadata"]["name"].endswith(SECRET_POLICIES)]


def operator_policy(objects: list[Object]) -> CheckPodPolicy:
    env = {e["name"]: e["value"] for e in container(objects)["env"] if "value" in e}
    return CheckPodPolicy.from_env(env)


def test_by_default_no_custom_image_runs_and_no_admission_policy_is_rendered() -> None:
    objects = render()
    policy = operator_policy(objects)
    assert policy.custom_images is None and policy.service_account is None
    assert policy.maxima == {"cpu": "4", "memory": "8Gi"}
    # Only the Secrets' policies.
    policies = of_kind(objects, "ValidatingAdmissionPolicy")
    assert sorted(p["metadata"]["name"].removeprefix("mg-modelgate") for p in policies) == sorted(
        SECRET_POLICIES
    )


def test_allowed_custom_images_follow_the_allowlist_and_need_job_rights() -> None:
    objects = render(COMBINATIONS["custom check images"])
    policy = operator_policy(objects)
    field = "spec.gate.checks[0].job.image"
    assert policy.image_problem("ghcr.io/team/check:1", field) is None
    assert policy.image_problem("docker.io/evil/check:1", field) is not None
    (admission,) = custom_images(of_kind(objects, "ValidatingAdmissionPolicy"))
    (binding,) = custom_images(of_kind(objects, "ValidatingAdmissionPolicyBinding"))
    assert binding["spec"]["policyName"] == admission["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert "matchResources" not in binding["spec"]  # cluster scope: every namespace
    # Without an allowlist, any image.
    anything = operator_policy(render({"gate": {"customImages": {"allowed": True}}}))
    assert anything.image_problem("docker.io/any/thing:1", field) is None


def test_check_service_accounts_have_no_token_and_the_policy_binds_only_the_watched_namespaces() -> None:
    objects = render(COMBINATIONS["check ServiceAccounts"])
    accounts = [
        a for a in of_kind(objects, "ServiceAccount") if a["metadata"]["namespace"] != "modelgate-system"
    ]
    assert sorted(a["metadata"]["namespace"] for a in accounts) == ["team-a", "team-b"]
    assert all(a["automountServiceAccountToken"] is False for a in accounts)
    names = {a["metadata"]["name"] for a in accounts}
    assert names == {operator_policy(objects).service_account}
    # No role names them: they may do nothing in the API.
    bound = {
        s["name"]
        for o in [*of_kind(objects, "RoleBinding"), *of_kind(objects, "ClusterRoleBinding")]
        for s in o["subjects"]
    }
    assert not names & bound
    (binding,) = custom_images(of_kind(objects, "ValidatingAdmissionPolicyBinding"))
    (selected,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert selected["values"] == ["team-a", "team-b"]


def test_gate_job_namespaces_narrow_job_creation_to_them() -> None:
    objects = render(COMBINATIONS["gate Jobs in some namespaces"])
    creating = [
        (role["kind"], role["metadata"].get("namespace"))
        for role, rule in rules(objects)
        if "jobs" in rule["resources"] and "create" in rule["verbs"]
    ]
    assert creating == [("Role", "team-a")]
    watching = [
        role["kind"]
        for role, rule in rules(objects)
        if "jobs" in rule["resources"] and "watch" in rule["verbs"]
    ]
    assert watching == ["ClusterRole"]


def test_contradictory_gate_values_fail_with_a_clear_message() -> None:
    narrowed = {
        **COMBINATIONS["namespaces scope"],
        "rbac": {"scope": "namespaces", "gateJobNamespaces": ["x"]},
    }
    assert "rbac.gateJobNamespaces" in render_error(narrowed)
    assert "gate.checkServiceAccount.create" in render_error(
        {"gate": {"checkServiceAccount": {"create": True}}}
    )
    assert re.search(
        r"/gate/checkResources/max/cpu", render_error({"gate": {"checkResources": {"max": {"cpu": "lots"}}}})
    )


def test_the_secret_policies_bind_the_watched_namespaces_and_can_be_turned_off() -> None:
    watched = render(COMBINATIONS["check ServiceAccounts"])
    bindings = [
        b for b in of_kind(watched, "ValidatingAdmissionPolicyBinding") if b not in custom_images([b])
    ]
    assert len(bindings) == len(SECRET_POLICIES)
    for binding in bindings:
        (selected,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
        assert selected["values"] == ["team-a", "team-b"]
    off = {
        "gate": {"storageSecrets": {"requireReadRights": False}},
        "secretRedirects": {"requireReadRights": False},
    }
    assert of_kind(render(off), "ValidatingAdmissionPolicy") == []
