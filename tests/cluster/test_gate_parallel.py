"""Evaluation in parallel on the bed (issue 25, item 2): one gate runs the same evaluator check twice,
as one Pod and as an Indexed Job of four (the bed's kube-controller-manager creates the indexed Pods,
the bed runs each as a local process with the index the Job controller gives it), and the four
shards' counts, added up by the operator, score exactly as the one Pod did. The 20,000-item
comparison and the items per second are in bench/test_gate_parallel.py."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

from kubernetes import client

from modelgate.api import Phase, Verdict
from modelgate.api.gate_shard import COMPLETION_INDEX_ANNOTATION
from modelgate.api.gate_status import CheckState, CheckStatus
from modelgate.kube.checks import CHECK_LABEL
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.cluster.test_gate_evaluator import POLICY, QUALITY, ended, evaluated

ITEMS = 300  # per capability
SHARDS = 4
RECORDED = 120
SAMPLE = 90  # drawn over the whole replay before it is split: every shard must draw the same
CANDIDATE = {"math": 0.88, "recall": 0.84}
# How long each answer took is the one figure two runs need not share.
TIMED = "replay-p95-latency-seconds"


def recorded_requests(count: int) -> str:
    return "".join(json.dumps({"prompt": f"Tell me about topic {i}."}) + "\n" for i in range(count))


def evaluator_check(name: str, parallelism: int) -> dict[str, Any]:
    replay = {"configMap": {"name": "qa-set", "key": "replay.jsonl"}, "sample": SAMPLE}
    evaluator = {**QUALITY["evaluator"], "replay": replay, "concurrency": 8}
    return {
        "name": name,
        "evaluator": evaluator,
        "parallelism": parallelism,
        "timeout": "2m",
        "policy": POLICY,
    }


def indexed_pods(api_client: client.ApiClient, namespace: str, check: str) -> dict[str, str]:
    """The uids of the check's Pods by their completion index, once its Indexed Job has made one
    per shard."""
    core = client.CoreV1Api(api_client)

    def every_index() -> dict[str, str] | None:
        pods = core.list_namespaced_pod(namespace, label_selector=f"{CHECK_LABEL}={check}").items
        indexes = {
            (p.metadata.annotations or {}).get(COMPLETION_INDEX_ANNOTATION): p.metadata.uid for p in pods
        }
        return indexes if len(pods) >= SHARDS else None

    return wait_for(every_index, timeout=30, what=f"the {SHARDS} Pods of check {check}")


def pod_process(workdir: Path, uid: str) -> int | None:
    """The pid of the process the bed runs for the Pod: the one whose working directory is the Pod's
    (testbed/check_pods.py), once it runs."""
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and (entry / "cwd").resolve() == workdir / uid:
                return int(entry.name)
    return None


def figures(check: CheckStatus) -> dict[str, tuple[float, float | None, int]]:
    return {s.name: (s.candidate, s.incumbent, s.samples) for s in check.scores if s.name != TIMED}


def test_four_shards_score_exactly_as_one_pod(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    checks = [evaluator_check("whole", 1), evaluator_check("sharded", SHARDS)]
    replay = recorded_requests(RECORDED)
    with evaluated(
        local_bed, api_client, namespace, tmp_path, CANDIDATE, items=ITEMS, checks=checks, replay=replay
    ) as scenario:
        assert set(indexed_pods(api_client, namespace, "sharded")) == {str(i) for i in range(SHARDS)}
        final = ended(scenario)
    assert final.gate is not None
    measured = {check.name: check for check in final.gate.checks}
    messages = [c.message for c in measured.values()]
    assert all(c.state is CheckState.MEASURED for c in measured.values()), messages
    whole, sharded = measured["whole"], measured["sharded"]
    assert figures(sharded) == figures(whole)
    # So do the tokens per task: the shards' sums add up to the one Pod's.
    assert sharded.tokens == whole.tokens and sharded.overall_tokens == whole.overall_tokens
    assert [(t.name, t.candidate_counted, t.uncounted) for t in whole.tokens] == [
        (n, ITEMS, 0) for n in CANDIDATE
    ]
    # Not a vacuous agreement: the doubles answer exactly these shares of the whole set right.
    assert figures(whole)["math"] == (CANDIDATE["math"], 0.8, ITEMS)
    assert figures(whole)["replay-error-rate"][2] == SAMPLE
    timed = {c.name: next(s.samples for s in c.scores if s.name == TIMED) for c in (whole, sharded)}
    assert timed == {"whole": SAMPLE, "sharded": SAMPLE}


def test_a_shard_that_fails_fails_the_check_naming_its_index(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    """Shard 2's process ends before it writes its counts (as an evicted or crashed Pod's would); the
    other shards have their replay and score."""
    checks = [{**evaluator_check("sharded", SHARDS), "policy": POLICY}]
    replay = recorded_requests(RECORDED)
    with evaluated(
        local_bed, api_client, namespace, tmp_path, CANDIDATE, items=5 * ITEMS, checks=checks, replay=replay
    ) as scenario:
        uid = indexed_pods(api_client, namespace, "sharded")["2"]
        pid = wait_for(lambda: pod_process(tmp_path, uid), timeout=30, what="shard 2's process")
        os.kill(pid, signal.SIGKILL)
        final = ended(scenario)
    assert final.phase is Phase.FAILED and final.gate is not None
    (check,) = final.gate.checks
    assert (check.state, check.verdict) == (CheckState.ERROR, Verdict.FAIL)
    assert "shard 2 of 4" in (check.message or "")
    assert scenario.recorder.candidate_weights() == [0]
