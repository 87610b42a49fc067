"""What the operator gives an evaluator Job that reads from or writes to object storage, and what it
keeps of the Job's answer: credentials only by reference to the tenant's Secret, the results'
location of the check's own, a pointer kept only there, and a missing Secret named by its field."""

from __future__ import annotations

from typing import Any

import pytest

from modelgate.api.gate import GateCheck
from modelgate.api.gate_result import GateResult, StoredData
from modelgate.api.gate_shard import CapabilityCounts, ShardResult
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured
from modelgate.evaluator.result import failure_result
from modelgate.evaluator.storage_failure import ResultsNotStored, StoredInputError
from modelgate.kube.check_storage import (
    ResultsTarget,
    own_pointer_only,
    storage_secret_fields,
    stored_url_fields,
)
from modelgate.kube.checks import (
    CheckTarget,
    check_job,
    evaluator_container,
    observe_job,
)
from tests.unit.test_gate_indexed_jobs import COMPLETE, FAILED, SHARDS, indexed_pod
from tests.unit.test_gate_jobs import ROLLOUT

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


def measured(*pointers: str) -> CheckMeasured:
    return CheckMeasured(GateResult(summary="s"), pointers)


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
    assert own_pointer_only(measured(pointer), RESULTS).results_urls == ((pointer,) if kept else ())
    assert own_pointer_only(measured(pointer), None).results_urls == ()  # no results asked for
    # A parallel check's shards: each pointer on its own.
    own = f"{RESULTS.location}/v/results-0-of-2.jsonl"
    assert own_pointer_only(measured(own, pointer), RESULTS).results_urls == (own, pointer)[: 1 + kept]


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
    fields = storage_secret_fields(CHECK, "spec.gate.checks[0]", RESULTS)
    assert fields == [
        "spec.gate.checks[0].evaluator.testSet.s3.secret (sets-store)",
        "spec.gate.results.s3.secret (results-store)",
    ]
    seen = observe_job(job, [pod], "5m", secret_fields=fields)
    assert isinstance(seen, CheckFailed)
    assert all(field in seen.message for field in fields)


def test_every_shard_of_a_parallel_check_gets_the_secrets_and_writes_its_own_results() -> None:
    check = CHECK.model_copy(update={"parallelism": SHARDS})
    made, volumes = evaluator_container(check, TARGET, "modelgate:1", "spec.gate.checks[0]", {}, RESULTS)
    template = check_job(ROLLOUT, check, "chat-quality-1", made, volumes, {})["spec"]["template"]
    (shard,) = template["spec"]["containers"]  # the one template of every index's Pod
    assert {f"--shards={SHARDS}", f"--results={RESULTS.location}"} <= set(shard["args"])
    refs = {e["valueFrom"]["secretKeyRef"]["name"] for e in shard["env"] if "valueFrom" in e}
    assert refs == {"sets-store", "results-store"}


def test_a_parallel_checks_status_points_at_each_shards_results_in_index_order() -> None:
    folder = f"{RESULTS.location}/sha256-0123456789abcdef"
    pods = [indexed_pod(i, 0, shard_counts(i, f"{folder}/results-{i}-of-{SHARDS}.jsonl")) for i in (2, 0, 1)]

    seen = observe_job(COMPLETE, pods, "5m", SHARDS)

    assert isinstance(seen, CheckMeasured), seen
    expected = tuple(f"{folder}/results-{i}-of-{SHARDS}.jsonl" for i in range(SHARDS))
    assert own_pointer_only(seen, RESULTS).results_urls == expected


def shard_counts(index: int, pointer: str) -> str:
    capability = CapabilityCounts(name="math", items=10, candidate_passed=9, incumbent_passed=8)
    shard = ShardResult(index=index, shards=SHARDS, capabilities=(capability,), results_url=pointer)
    return shard.model_dump_json(by_alias=True)


def test_a_model_evaluations_missing_secret_is_named_by_its_own_field() -> None:
    assert storage_secret_fields(CHECK, "spec.checks[1]", None) == [
        "spec.checks[1].evaluator.testSet.s3.secret (sets-store)"
    ]


@pytest.mark.parametrize(
    ("error", "field"),
    [
        (
            StoredInputError("--test-set: s3://sets/qa.jsonl: cannot be reached", StoredData.TEST_SET),
            "spec.gate.checks[0].evaluator.testSet.s3.url",
        ),
        (
            ResultsNotStored("--results: s3://results/x: the bucket does not exist", StoredData.RESULTS),
            "spec.gate.results.s3.url",
        ),
    ],
)
def test_a_store_that_failed_a_shard_is_named_by_its_field(error: Exception, field: str) -> None:
    """The evaluator says which of its stored inputs or outputs failed; the operator, which knows
    the spec, names the field that points at it."""
    written = failure_result(error).model_dump_json(by_alias=True, exclude_none=True)
    check = CHECK.model_copy(update={"parallelism": SHARDS})
    stored = stored_url_fields(check, "spec.gate.checks[0]", RESULTS)
    pods = [indexed_pod(0, 0, ""), indexed_pod(1, 3, written)]

    seen = observe_job(FAILED, pods, "5m", SHARDS, stored_fields=stored)

    assert isinstance(seen, CheckFailed), seen
    assert field in seen.message and "shard 1" in seen.message and str(error) in seen.message
    # Without the evaluator's word on which store failed, no field is guessed.
    unnamed = failure_result(RuntimeError(str(error))).model_dump_json(by_alias=True, exclude_none=True)
    guessed = observe_job(FAILED, [indexed_pod(1, 3, unnamed)], "5m", SHARDS, stored_fields=stored)
    assert isinstance(guessed, CheckFailed) and field not in guessed.message
