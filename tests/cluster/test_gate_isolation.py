"""A gate check gives a tenant no privilege (issue 21): its Pod runs with no API token, as non-root
under the restricted Pod Security profile the real API server enforces; a Pod planted with the
Job's labels cannot supply the result; images outside the operator's allowlist and resources over
its maxima are refused naming the field; a rollout name too long for a label still gets its gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate.api import Phase, Verdict
from modelgate.api.gate_status import GateDecision
from modelgate.kube.checks import CHECK_LABEL, JOB_NAME_LABEL
from testbed.waiting import wait_for
from tests.support.gate import (
    POLICY,
    check_pods,
    ended,
    gate_result,
    gated_rollout,
    scenario,
    score,
    script_check,
)
from tests.support.scenario import Scenario

__all__ = ["check_pods", "scenario"]  # the fixtures
RESTRICTED = {"pod-security.kubernetes.io/enforce": "restricted"}
TOKEN_DIRECTORY = "/var/run/secrets/kubernetes.io/serviceaccount"
# The Job controller adopts an orphan carrying this label (its selector); the unit tests cover an
# adopted Pod (tests/unit/test_gate_jobs.py).
CONTROLLER_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")


def check_pod(api_client: client.ApiClient, namespace: str) -> dict[str, Any]:
    """The first check Pod the Job controller made, once the bed runs it, as the API server stores it."""
    core = client.CoreV1Api(api_client)

    def running() -> dict[str, Any] | None:
        pods = core.list_namespaced_pod(namespace, label_selector=CHECK_LABEL).items
        found = [p for p in pods if p.metadata.owner_references and p.status.phase == "Running"]
        stored: dict[str, Any] | None = api_client.sanitize_for_serialization(found[0]) if found else None
        return stored

    return wait_for(running, timeout=60, what="the check's Pod to run")


def test_a_check_pod_runs_without_a_token_and_as_non_root_under_restricted_pod_security(
    scenario: Scenario, namespace: str, api_client: client.ApiClient, tmp_path: Path
) -> None:
    core = client.CoreV1Api(api_client)
    core.patch_namespace(namespace, {"metadata": {"labels": RESTRICTED}})
    # The API server enforces the profile here: a Pod as Kubernetes defaults it is refused, once Pod
    # Security admission has seen the namespace's new label (its cache of namespaces follows a watch).
    plain = {
        "metadata": {"generateName": "plain-"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }

    def plain_pod_refused() -> ApiException | None:
        try:
            core.create_namespaced_pod(namespace, plain)
        except ApiException as error:
            return error
        return None

    refused = wait_for(plain_pod_refused, timeout=10, what="Pod Security admission to refuse a plain Pod")
    assert refused.status == 403 and "PodSecurity" in str(refused.body)

    release = tmp_path / "measure-now"
    check = script_check("quality", gate_result(score("math", 0.9, 0.8)), wait_for=release, policy=POLICY)
    scenario.apply(gated_rollout(namespace, [check], [{"setWeight": 50}]))
    pod = check_pod(api_client, namespace)
    spec = pod["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert not [v for v in spec.get("volumes") or [] if "projected" in v or "secret" in v]
    (container,) = spec["containers"]
    assert all(m["mountPath"] != TOKEN_DIRECTORY for m in container.get("volumeMounts") or [])
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] > 0
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["resources"]["limits"] and container["resources"]["requests"]
    release.touch()
    final = ended(scenario)
    assert final.phase is Phase.SUCCEEDED, final.message
    assert final.gate is not None and final.gate.decision is GateDecision.CANARY


def test_a_planted_pod_with_the_jobs_labels_cannot_change_the_gates_decision(
    scenario: Scenario, namespace: str, api_client: client.ApiClient, tmp_path: Path
) -> None:
    release = tmp_path / "measure-now"
    regressed = gate_result(score("math", 1.0, 0.8), score("coding", 0.7, 0.8))
    check = script_check("quality", regressed, wait_for=release, policy=POLICY)
    scenario.apply(gated_rollout(namespace, [check], [{"setWeight": 50}]))
    real = check_pod(api_client, namespace)
    # The attacker's Pod: the Job's labels and Pod spec (on the same node), its command writing a
    # passing result at once; named to be listed before the Job's own.
    forged = gate_result(score("math", 1.0, 0.8), score("coding", 0.9, 0.8))
    labels = {k: v for k, v in real["metadata"]["labels"].items() if k not in CONTROLLER_UID_LABELS}
    spec = real["spec"]
    spec["containers"][0]["args"] = script_check("quality", forged)["job"]["args"]
    planted = {"metadata": {"name": "a-planted-check", "labels": labels}, "spec": spec}
    assert labels[JOB_NAME_LABEL] == real["metadata"]["labels"][JOB_NAME_LABEL]
    core = client.CoreV1Api(api_client)
    core.create_namespaced_pod(namespace, planted)
    wait_for(
        lambda: core.read_namespaced_pod(planted["metadata"]["name"], namespace).status.phase == "Succeeded",
        timeout=60,
        what="the planted Pod to exit 0",
    )
    release.touch()
    final = ended(scenario)
    assert final.phase is Phase.FAILED and final.gate is not None
    assert final.gate.decision is GateDecision.REJECT
    (quality,) = final.gate.checks
    assert {s.name: s.verdict for s in quality.scores} == {"math": Verdict.PASS, "coding": Verdict.FAIL}


def test_an_image_outside_the_allowlist_and_resources_over_the_maximum_are_refused_naming_the_field(
    scenario: Scenario, namespace: str
) -> None:
    checks = [
        script_check("foreign", gate_result(), image="docker.io/attacker/check:1"),
        script_check("greedy", gate_result(), resources={"limits": {"memory": "64Gi"}}),
    ]
    scenario.apply(gated_rollout(namespace, checks, [{"setWeight": 50}]))
    final = ended(scenario)
    assert final.phase is Phase.FAILED and final.gate is not None
    assert final.gate.decision is GateDecision.REJECT
    messages = {c.name: (c.verdict, c.message or "") for c in final.gate.checks}
    assert messages["foreign"][0] is Verdict.FAIL
    assert "spec.gate.checks[0].job.image" in messages["foreign"][1]
    assert messages["greedy"][0] is Verdict.FAIL
    assert "spec.gate.checks[1].resources.limits.memory" in messages["greedy"][1]
    assert scenario.recorder.candidate_weights() == [0]


def test_a_rollout_named_with_120_characters_runs_its_gate(scenario: Scenario, namespace: str) -> None:
    name = "chat-" + "x" * 115
    check = script_check("quality", gate_result(score("math", 0.9, 0.8)), policy=POLICY)
    rollout = gated_rollout(namespace, [check], [{"setWeight": 50}])
    rollout["metadata"]["name"] = name
    scenario.apply(rollout)
    final = ended(scenario, name)
    assert final.phase is Phase.SUCCEEDED, final.message
    assert final.gate is not None and final.gate.decision is GateDecision.CANARY
    assert final.gate.checks[0].verdict is Verdict.PASS
