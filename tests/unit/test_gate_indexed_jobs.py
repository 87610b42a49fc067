"""A parallel evaluator check as an Indexed Job (kube/checks.py, kube/check_shards.py): the Job the
operator makes, and what its Pods say: every shard's counts added up, a failed, missing or
malformed shard failing the check by its index, and Pods the Job controller gave their index
variable still counted as the Job's own."""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelgate.api.gate import GateCheck
from modelgate.api.gate_result import WinRate
from modelgate.api.gate_shard import CapabilityCounts, ReplayCounts, ShardResult, SideCounts
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured
from modelgate.kube.check_shards import INJECTED_INDEX_ENV
from modelgate.kube.checks import CheckTarget, check_job, evaluator_container, observe_job
from tests.unit.test_gate_jobs import CHECK_CONTAINER, ROLLOUT, job, terminated

SHARDS = 3
COMPLETE = job(("Complete", "CompletionsReached"))
FAILED = job(("Failed", "BackoffLimitExceeded"))


def counts(index: int, passed: int) -> str:
    shard = ShardResult(
        index=index,
        shards=SHARDS,
        capabilities=(CapabilityCounts(name="math", items=10, candidate_passed=passed, incumbent_passed=8),),
        win_rate=WinRate(wins=index, ties=1, losses=0, judge="j"),
    )
    return shard.model_dump_json(by_alias=True)


def indexed_pod(index: int, code: int, message: str) -> dict[str, Any]:
    """A Pod of the Indexed Job as the Job controller makes it: its index annotated and given to
    the container in a variable the template does not have."""
    container = {**CHECK_CONTAINER, "env": [INJECTED_INDEX_ENV[0]]}
    pod = terminated(code, message, container=container)
    pod["metadata"]["name"] = f"chat-quality-1-{index}-x"
    pod["metadata"]["annotations"] = {"batch.kubernetes.io/job-completion-index": str(index)}
    return pod


def test_the_shards_counts_add_up_to_one_result() -> None:
    pods = [indexed_pod(i, 0, counts(i, passed)) for i, passed in enumerate((9, 7, 10))]

    seen = observe_job(COMPLETE, pods, "5m", SHARDS)

    assert isinstance(seen, CheckMeasured), seen
    (math,) = seen.result.scores
    assert (math.candidate, math.incumbent, math.samples) == (round(26 / 30, 4), 0.8, 30)
    assert seen.result.win_rate is not None
    assert (seen.result.win_rate.wins, seen.result.win_rate.ties) == (0 + 1 + 2, 3)


def test_a_failed_shard_fails_the_check_naming_its_index_and_reason() -> None:
    said = '{"summary": "could not measure: the candidate endpoint did not answer"}'
    pods = [indexed_pod(0, 0, counts(0, 9)), indexed_pod(2, 1, said)]

    seen = observe_job(FAILED, pods, "5m", SHARDS)

    assert isinstance(seen, CheckFailed)
    assert "shard 2 of 3" in seen.message and "code 1" in seen.message
    assert "candidate endpoint did not answer" in seen.message


def test_a_missing_or_malformed_shard_fails_the_check_naming_its_index() -> None:
    missing = observe_job(
        COMPLETE, [indexed_pod(0, 0, counts(0, 9)), indexed_pod(2, 0, counts(2, 9))], "5m", 3
    )
    malformed = [
        indexed_pod(0, 0, counts(0, 9)),
        indexed_pod(1, 0, '{"index": 1}'),
        indexed_pod(2, 0, counts(2, 9)),
    ]

    assert isinstance(missing, CheckFailed) and "shard 1 of 3" in missing.message
    seen = observe_job(COMPLETE, malformed, "5m", SHARDS)
    assert isinstance(seen, CheckFailed) and "shard 1 of 3" in seen.message and "shards" in seen.message


def replayed(index: int) -> dict[str, Any]:
    """A shard's counts with a replay of 20 requests a side, as JSON data to spoil."""
    side = SideCounts(asked=20, answered=19, refused=1, answer_chars=400, timed=19, slowest=(2.5, 1.5))
    shard = json.loads(counts(index, 9))
    replay = ReplayCounts(candidate=side, incumbent=side, both_answered=18, changed=3)
    shard["replay"] = replay.model_dump(mode="json", by_alias=True)
    return shard


@pytest.mark.parametrize(
    ("part", "field", "value"),
    [
        ("capabilities", "candidateFailed", 2),  # 9 passed and 2 failed of 10 items
        ("capabilities", "incumbentPassed", 11),
        ("candidate", "answered", 21),  # more answers than requests
        ("candidate", "slowest", []),  # no latency for a 95th percentile of 19
        ("candidate", "slowest", [1.0] * 20),  # more latencies than were timed
        ("incumbent", "refused", 20),
        ("replay", "changed", 19),  # more changed than both answered
        ("replay", "bothAnswered", 20),
    ],
)
def test_a_shard_whose_counts_contradict_each_other_fails_the_check_naming_it(
    part: str, field: str, value: object
) -> None:
    spoiled = replayed(1)
    where = {
        "capabilities": spoiled["capabilities"][0],
        "replay": spoiled["replay"],
        "candidate": spoiled["replay"]["candidate"],
        "incumbent": spoiled["replay"]["incumbent"],
    }
    where[part][field] = value
    messages = [json.dumps(replayed(0)), json.dumps(spoiled), json.dumps(replayed(2))]

    seen = observe_job(COMPLETE, [indexed_pod(i, 0, m) for i, m in enumerate(messages)], "5m", SHARDS)

    assert isinstance(seen, CheckFailed), seen
    assert "shard 1 of 3 wrote malformed counts" in seen.message


def test_shards_whose_counts_agree_add_up_with_their_replay() -> None:
    messages = [json.dumps(replayed(i)) for i in range(SHARDS)]

    seen = observe_job(COMPLETE, [indexed_pod(i, 0, m) for i, m in enumerate(messages)], "5m", SHARDS)

    assert isinstance(seen, CheckMeasured), seen
    assert seen.result.requests is not None and seen.result.requests.candidate.asked == 3 * (10 + 20)


def test_a_pod_with_any_other_variable_is_not_the_jobs_own() -> None:
    planted = indexed_pod(1, 0, counts(1, 10))
    planted["spec"]["containers"][0]["env"].append({"name": "MODELGATE_ALLOW_LOOPBACK", "value": "true"})
    pods = [indexed_pod(0, 0, counts(0, 9)), planted, indexed_pod(2, 0, counts(2, 9))]

    seen = observe_job(COMPLETE, pods, "5m", SHARDS)

    assert isinstance(seen, CheckFailed) and "shard 1 of 3" in seen.message


def test_a_parallel_evaluator_runs_as_an_indexed_job_of_one_pod_per_shard() -> None:
    check = GateCheck.model_validate(
        {"name": "quality", "parallelism": 4, "evaluator": {"testSet": {"url": "http://sets/qa.jsonl"}}}
    )
    target = CheckTarget("http://a/v1", "http://b/v1", "v2", "v1")
    container, volumes = evaluator_container(check, target, "modelgate:1", "spec.gate.checks[0]", {})
    spec = check_job(ROLLOUT, check, "chat-quality-1", container, volumes, {})["spec"]

    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 4, 4)
    assert spec["backoffLimit"] == 0  # one failed shard fails the Job
    assert "--shards=4" in spec["template"]["spec"]["containers"][0]["args"]
