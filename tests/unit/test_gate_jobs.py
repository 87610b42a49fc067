"""A check's Job as the operator builds it, and what a Job and its Pods say about the check
(kube/checks.py): a result read from the termination message, a malformed one named by field, a
deadline, a failure, a container that cannot start."""

from __future__ import annotations

from typing import Any

import pytest

from modelgate.api.gate import GateCheck
from modelgate.api.gate_result import NO_ANSWER_EXIT_CODE
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured, CheckRunning
from modelgate.kube.check_pod_policy import CheckPodPolicy
from modelgate.kube.checks import (
    CHECK_LABEL,
    ROLLOUT_LABEL,
    CheckTarget,
    check_job,
    custom_container,
    evaluator_container,
    observe_job,
)
from modelgate.kube.labels import MAX_LABEL_VALUE

ROLLOUT = {"metadata": {"name": "chat", "namespace": "serving", "uid": "uid-1"}}
RESULT = '{"scores": [{"name": "math", "candidate": 0.9, "incumbent": 0.8, "samples": 50}]}'
FORGED = '{"scores": [{"name": "math", "candidate": 1.0, "incumbent": 0.1, "samples": 50}]}'
JOB_UID = "job-uid-1"
CHECK_CONTAINER = {"name": "check", "image": "check:1", "args": ["--measure"]}
CONTROLLED = [{"kind": "Job", "uid": JOB_UID, "controller": True}]


def job(*conditions: tuple[str, str]) -> dict[str, Any]:
    listed = [{"type": kind, "status": "True", "reason": reason} for kind, reason in conditions]
    return {
        "metadata": {"name": "chat-quality-1", "uid": JOB_UID},
        "spec": {"template": {"spec": {"containers": [CHECK_CONTAINER]}}},
        "status": {"conditions": listed},
    }


def pod(
    state: dict[str, Any],
    phase: str = "Running",
    owners: list[dict[str, Any]] = CONTROLLED,
    container: dict[str, Any] = CHECK_CONTAINER,
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    status = {"name": "check", "state": state}
    return {
        "metadata": {"ownerReferences": owners, "labels": {"batch.kubernetes.io/job-name": "chat-quality-1"}},
        "spec": {"containers": [container], **(spec or {})},
        "status": {"phase": phase, "containerStatuses": [status]},
    }


def terminated(code: int, message: str, **planted: Any) -> dict[str, Any]:
    state = {"terminated": {"exitCode": code, "message": message}}
    return pod(state, "Succeeded" if code == 0 else "Failed", **planted)


def test_a_complete_job_gives_its_result() -> None:
    seen = observe_job(job(("Complete", "CompletionsReached")), [terminated(0, RESULT)], "5m")
    assert isinstance(seen, CheckMeasured) and seen.result.scores[0].name == "math"


@pytest.mark.parametrize(
    ("the_job", "pods", "expected"),
    [
        (job(("Complete", "")), [terminated(0, '{"scores": [{"name": "math"}]}')], "scores[0].candidate"),
        (job(("Complete", "")), [terminated(0, "")], "wrote no result"),
        (job(("Failed", "DeadlineExceeded")), [], "deadline (timeout 5m)"),
        (job(("Failed", "BackoffLimitExceeded")), [terminated(2, "")], "exited with code 2"),
        (
            job(),
            [pod({"waiting": {"reason": "ErrImagePull", "message": "not found"}}, "Pending")],
            "ErrImagePull",
        ),
    ],
)
def test_a_check_that_could_not_measure_says_why(
    the_job: dict[str, Any], pods: list[dict[str, Any]], expected: str
) -> None:
    seen = observe_job(the_job, pods, "5m")
    assert isinstance(seen, CheckFailed) and expected in seen.message


SILENT = (
    '{"scores": [{"name": "math", "candidate": 0, "incumbent": 0, "samples": 25}], "requests": '
    '{"candidate": {"asked": 25, "answered": 0}, "incumbent": {"asked": 25, "answered": 0}}}'
)


def test_a_check_that_exited_saying_a_side_answered_nothing_is_measured_not_an_error() -> None:
    # Taken for a check that could not measure, onError Inconclusive would make it a canary.
    failed = job(("Failed", "BackoffLimitExceeded"))

    seen = observe_job(failed, [terminated(NO_ANSWER_EXIT_CODE, SILENT)], "5m")

    assert isinstance(seen, CheckMeasured) and seen.result.requests is not None
    assert seen.result.requests.candidate.answered == 0
    # Another code, or a result that does not count requests, still could not measure.
    assert isinstance(observe_job(failed, [terminated(1, SILENT)], "5m"), CheckFailed)
    assert isinstance(observe_job(failed, [terminated(NO_ANSWER_EXIT_CODE, RESULT)], "5m"), CheckFailed)


def test_a_job_still_running_or_not_created_is_running() -> None:
    assert isinstance(observe_job(None, [], "5m"), CheckRunning)
    assert isinstance(observe_job(job(), [pod({"running": {}})], "5m"), CheckRunning)


def test_the_evaluator_job_runs_modelgate_eval_with_the_contracts_flags() -> None:
    check = GateCheck.model_validate(
        {
            "name": "quality",
            "timeout": "10m",
            "evaluator": {
                "testSet": {"configMap": {"name": "qa", "key": "set.jsonl"}},
                "judge": {"url": "http://judge:8000/v1", "model": "judge"},
            },
        }
    )
    target = CheckTarget(
        "http://chat-v2.serving.svc:8000/v1", "http://chat-v1.serving.svc:8000/v1", "v2", "v1"
    )
    policy = {"MODELGATE_API_SERVER": "https://10.96.0.1:443"}
    container, volumes = evaluator_container(check, target, "modelgate:1", "spec.gate.checks[0]", policy)
    manifest = check_job(ROLLOUT, check, "chat-quality-1", container, volumes, {})
    spec = manifest["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (0, 600)
    assert manifest["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert manifest["metadata"]["labels"][CHECK_LABEL] == "quality"
    # A mesh's injected sidecar would make the Pod not the Job's own (compared whole): none is asked.
    assert spec["template"]["metadata"]["labels"]["sidecar.istio.io/inject"] == "false"
    (run,) = spec["template"]["spec"]["containers"]
    assert run["command"] == ["modelgate"] and run["args"][0] == "eval"
    assert "--result-file=/dev/termination-log" in run["args"]
    assert "--candidate=http://chat-v2.serving.svc:8000/v1" in run["args"]
    test_set = next(a for a in run["args"] if a.startswith("--test-set="))
    mount = run["volumeMounts"][0]["mountPath"]
    assert test_set == f"--test-set={mount}/set.jsonl"
    assert f"--inputs-within={mount}" in run["args"]  # the file is read from its mount alone
    env = {e["name"]: e["value"] for e in run["env"]}
    assert policy.items() <= env.items()  # the operator's egress policy
    assert spec["template"]["spec"]["volumes"][0]["configMap"]["name"] == "qa"
    assert "--judge=http://judge:8000/v1" in run["args"] and "--judge-model=judge" in run["args"]


@pytest.mark.parametrize(
    "planted",
    [
        {"owners": []},  # the Job's labels only
        {"owners": [{**CONTROLLED[0], "uid": "another-job"}]},  # controlled by another Job
        {"container": {**CHECK_CONTAINER, "args": ["--forge"]}},  # adopted, running another command
        # Adopted, the check's own container, but Pod-level fields that change what it reads or reaches.
        {"spec": {"hostAliases": [{"ip": "10.0.0.9", "hostnames": ["chat-v2.serving.svc"]}]}},
        {"spec": {"volumes": [{"name": "test-set", "configMap": {"name": "easy"}}]}},
        {"spec": {"initContainers": [{"name": "seed", "image": "busybox", "command": ["cp"]}]}},
        {"spec": {"dnsConfig": {"nameservers": ["10.0.0.9"]}, "dnsPolicy": "None"}},
        {"spec": {"containers": [CHECK_CONTAINER, {"name": "helper", "image": "helper:1"}]}},
        {"container": {**CHECK_CONTAINER, "envFrom": [{"configMapRef": {"name": "theirs"}}]}},
        {"spec": {"automountServiceAccountToken": True}},
    ],
)
def test_a_planted_pod_that_exited_0_cannot_supply_the_result(planted: dict[str, Any]) -> None:
    complete = job(("Complete", "CompletionsReached"))
    forged = terminated(0, FORGED, **planted)
    assert observe_job(complete, [forged, terminated(0, RESULT)], "5m") == observe_job(
        complete, [terminated(0, RESULT)], "5m"
    )
    # Alone, it is no result at all: the check could not measure.
    assert isinstance(observe_job(complete, [forged], "5m"), CheckFailed)
    failed = job(("Failed", "BackoffLimitExceeded"))
    assert isinstance(observe_job(failed, [forged, terminated(2, "")], "5m"), CheckFailed)


def test_a_pod_as_kubernetes_writes_it_from_the_template_is_the_jobs_own() -> None:
    """The scheduler, admission plugins and LimitRanger add to a Pod what its template lacks."""
    complete = job(("Complete", "CompletionsReached"))
    admitted = terminated(
        0,
        RESULT,
        container={**CHECK_CONTAINER, "resources": {"requests": {"cpu": "100m"}}},
        spec={
            "nodeName": "kwok-node-0",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}],
            "priority": 0,
            "preemptionPolicy": "PreemptLowerPriority",
        },
    )

    assert observe_job(complete, [admitted], "5m") == observe_job(complete, [terminated(0, RESULT)], "5m")
    assert isinstance(observe_job(complete, [admitted], "5m"), CheckMeasured)


def custom_check_job(rollout_name: str = "chat", **check: Any) -> dict[str, Any]:
    gate_check = GateCheck.model_validate({"name": "quality", "job": {"image": "check:1"}, **check})
    resources = CheckPodPolicy().resources(gate_check.resources, "spec.gate.checks[0].resources")
    assert not isinstance(resources, str)
    rollout = {"metadata": {**ROLLOUT["metadata"], "name": rollout_name}}
    container = custom_container(gate_check)
    return check_job(rollout, gate_check, "chat-quality-1", container, [], resources, "gate")


def test_a_check_pod_has_no_token_and_runs_under_the_restricted_profile() -> None:
    spec = custom_check_job()["spec"]["template"]["spec"]
    assert spec["automountServiceAccountToken"] is False and spec["serviceAccountName"] == "gate"
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] > 0
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = spec["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert set(container["resources"]) == {"requests", "limits"}


def test_the_evaluator_runs_with_a_read_only_root_and_a_scratch_tmp() -> None:
    check = GateCheck.model_validate(
        {"name": "quality", "evaluator": {"testSet": {"url": "http://sets/qa.jsonl"}}}
    )
    target = CheckTarget("http://a/v1", "http://b/v1", "v2", "v1")
    container, volumes = evaluator_container(check, target, "modelgate:1", "spec.gate.checks[0]", {})
    spec = check_job(ROLLOUT, check, "chat-quality-1", container, volumes, {})["spec"]["template"]["spec"]
    (run,) = spec["containers"]
    assert run["securityContext"]["readOnlyRootFilesystem"] is True
    assert run["securityContext"]["allowPrivilegeEscalation"] is False
    tmp = next(m for m in run["volumeMounts"] if m["mountPath"] == "/tmp")
    assert next(v for v in spec["volumes"] if v["name"] == tmp["name"])["emptyDir"]


def test_a_long_rollout_name_gives_valid_distinct_labels() -> None:
    long_a, long_b = "a" * 119 + "x", "a" * 119 + "y"
    labels_a = custom_check_job(long_a)["metadata"]["labels"]
    labels_b = custom_check_job(long_b)["metadata"]["labels"]
    assert len(labels_a[ROLLOUT_LABEL]) <= MAX_LABEL_VALUE
    assert labels_a[ROLLOUT_LABEL] != labels_b[ROLLOUT_LABEL]
    assert custom_check_job("chat")["metadata"]["labels"][ROLLOUT_LABEL] == "chat"
