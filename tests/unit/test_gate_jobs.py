"""A check's Job as the operator builds it, and what a Job and its Pods say about the check
(kube/checks.py): a result read from the termination message, a malformed one named by field, a
deadline, a failure, a container that cannot start."""

from __future__ import annotations

from typing import Any

import pytest

from modelgate.api.gate import GateCheck
from modelgate.core.gate import CheckFailed, CheckMeasured, CheckRunning
from modelgate.kube.checks import CHECK_LABEL, CheckTarget, check_job, evaluator_container, observe_job

ROLLOUT = {"metadata": {"name": "chat", "namespace": "serving", "uid": "uid-1"}}
RESULT = '{"scores": [{"name": "math", "candidate": 0.9, "incumbent": 0.8, "samples": 50}]}'


def job(*conditions: tuple[str, str]) -> dict[str, Any]:
    listed = [{"type": kind, "status": "True", "reason": reason} for kind, reason in conditions]
    return {"metadata": {"name": "chat-quality-1"}, "status": {"conditions": listed}}


def pod(state: dict[str, Any], phase: str = "Running") -> dict[str, Any]:
    container = {"name": "check", "state": state}
    return {
        "spec": {"containers": [{"name": "check", "image": "check:1"}]},
        "status": {"phase": phase, "containerStatuses": [container]},
    }


def terminated(code: int, message: str) -> dict[str, Any]:
    return pod({"terminated": {"exitCode": code, "message": message}}, "Succeeded" if code == 0 else "Failed")


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
    manifest = check_job(ROLLOUT, check, "chat-quality-1", container, volumes)
    spec = manifest["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (0, 600)
    assert manifest["metadata"]["ownerReferences"][0]["uid"] == "uid-1"
    assert manifest["metadata"]["labels"][CHECK_LABEL] == "quality"
    (run,) = spec["template"]["spec"]["containers"]
    assert run["command"] == ["modelgate"] and run["args"][0] == "eval"
    assert "--result-file=/dev/termination-log" in run["args"]
    assert "--candidate=http://chat-v2.serving.svc:8000/v1" in run["args"]
    test_set = next(a for a in run["args"] if a.startswith("--test-set="))
    mount = run["volumeMounts"][0]["mountPath"]
    assert test_set == f"--test-set={mount}/set.jsonl"
    assert f"--inputs-within={mount}" in run["args"]  # the file is read from its mount alone
    assert {e["name"]: e["value"] for e in run["env"]} == policy  # the operator's egress policy
    assert spec["template"]["spec"]["volumes"][0]["configMap"]["name"] == "qa"
    assert "--judge=http://judge:8000/v1" in run["args"] and "--judge-model=judge" in run["args"]
