"""What the operator gives an evaluator Job that reads from or writes to object storage, and what it
keeps of the Job's answer: credentials only by reference to the tenant's Secret, the results'
location of the check's own, a pointer kept only there, and a missing Secret named by its field."""

from __future__ import annotations

from typing import Any

import pytest

from modelgate.api.gate import GateCheck
from modelgate.api.gate_result import GateResult
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured
from modelgate.kube.checks import (
    CheckTarget,
    ResultsTarget,
    evaluator_container,
    observe_job,
    own_pointer_only,
    storage_secret_fields,
)

TARGET = CheckTarget("http://c.ns.svc:8000/v1", "http://i.ns.svc:8000/v1", "v2", "v1")
RESULTS = ResultsTarget("s3://results/gate/serving/chat/3-20261205T053000/quality", "results-store")
CHECK = GateCheck.model_validate(
    {
        "name": "quality",
        "evaluator": {
            "testSet": {"s3": {"url": "s3://sets/qa/v7.jsonl", "secret": "sets-store"}},
            "replay": {"configMap": {"name": "replay", "key": "r.jsonl"}},
        },
    }
)


def container(results: ResultsTarget | None = RESULTS) -> dict[str, Any]:
    made, _ = evaluator_container(CHECK, TARGET, "modelgate:1", "spec.gate.checks[0]", {}, results)
    return made


def test_a_stored_test_set_is_read_by_url_with_the_secrets_values_by_reference() -> None:
    made = container()
    assert "--test-set=s3://sets/qa/v7.jsonl" in made["args"]
    by_name = {entry["name"]: entry for entry in made["env"]}
    key = by_name["MODELGATE_TEST_SET_S3_SECRET_ACCESS_KEY"]
    assert "value" not in key
    assert key["valueFrom"]["secretKeyRef"] == {
        "name": "sets-store",
        "key": "secretAccessKey",
        "optional": False,
    }
    endpoint = by_name["MODELGATE_TEST_SET_S3_ENDPOINT_URL"]["valueFrom"]["secretKeyRef"]
    assert (endpoint["name"], endpoint["key"], endpoint["optional"]) == ("sets-store", "endpoint", True)
    assert not any(name.startswith("MODELGATE_REPLAY_S3_") for name in by_name)  # the replay is a ConfigMap


def test_results_go_to_the_checks_own_location_with_their_own_secret() -> None:
    made = container()
    assert f"--results={RESULTS.location}" in made["args"]
    refs = [
        e["valueFrom"]["secretKeyRef"] for e in made["env"] if e["name"].startswith("MODELGATE_RESULTS_S3_")
    ]
    assert {ref["name"] for ref in refs} == {"results-store"}
    assert not any(arg.startswith("--results") for arg in container(None)["args"])


def measured(pointer: str | None) -> CheckMeasured:
    return CheckMeasured(GateResult(summary="s", results_url=pointer))


@pytest.mark.parametrize(
    ("pointer", "kept"),
    [
        (f"{RESULTS.location}/sha256-0123456789abcdef/results.jsonl", True),
        ("s3://results/gate/serving/other-rollout/3-x/quality/v/results.jsonl", False),  # another's
        (f"{RESULTS.location}-evil/v/results.jsonl", False),  # a sibling sharing the prefix's text
        (f"{RESULTS.location}/../../other/results.jsonl", False),  # climbing out
        ("https://attacker.example/results.jsonl", False),
    ],
)
def test_a_results_pointer_is_kept_only_under_the_checks_own_location(pointer: str, kept: bool) -> None:
    assert own_pointer_only(measured(pointer), RESULTS).result.results_url == (pointer if kept else None)
    assert own_pointer_only(measured(pointer), None).result.results_url is None  # no results asked for


def test_a_container_missing_its_secret_names_the_fields_that_name_secrets() -> None:
    job = {
        "metadata": {"uid": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "check", "image": "modelgate:1"}]}}},
        "status": {},
    }
    waiting = {
        "waiting": {"reason": "CreateContainerConfigError", "message": 'secret "sets-store" not found'}
    }
    pod = {
        "metadata": {"ownerReferences": [{"uid": "j", "controller": True}]},
        "spec": {"containers": [{"name": "check", "image": "modelgate:1"}]},
        "status": {"containerStatuses": [{"name": "check", "state": waiting}]},
    }
    fields = storage_secret_fields(CHECK, 0, RESULTS)
    assert fields == [
        "spec.gate.checks[0].evaluator.testSet.s3.secret (sets-store)",
        "spec.gate.results.s3.secret (results-store)",
    ]
    seen = observe_job(job, [pod], "5m", fields)
    assert isinstance(seen, CheckFailed)
    assert all(field in seen.message for field in fields)
