"""The gate's built-in evaluator on the bed: the operator's Job runs `modelgate eval` (as a local
process standing in for its Pod) against the two model Services, reaching the doubles, with the test
set mounted from a ConfigMap; its result decides the gate. The doubles know the set's items and
answer a configured share of each capability right (testbed/answering.py); bench/test_gate_evaluator.py
has the built-in evaluator reject a candidate that regressed one capability."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase, Verdict
from modelgate.api.gate_status import CheckState, CheckStatus, GateDecision
from testbed.answering import Answers
from testbed.check_pods import CheckPods
from testbed.localcluster import LocalCluster
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.gate import Json, gated_rollout
from tests.support.kube import create
from tests.support.scenario import Scenario, serving

ITEMS = 25  # per capability
POLICY = {"minSamples": 20, "maxDrop": 0.05, "maxTestSetAge": "720h"}
INCUMBENT = {"math": 0.8, "recall": 0.8}


def qa_test_set(dated: datetime) -> str:
    """Items of two capabilities whose reference answers the doubles know (testbed/answering.py)."""
    identity = {"name": "qa", "version": dated.strftime("%Y-%m-%d"), "date": dated.isoformat()}
    math = [
        {"id": f"m{i}", "capability": "math", "prompt": f"What is {i} + 7?", "check": {"number": i + 7}}
        for i in range(ITEMS)
    ]
    recall = [
        {
            "id": f"r{i}",
            "capability": "recall",
            "prompt": f"Repeat R{i:03d}.",
            "check": {"exact": f"R{i:03d}"},
        }
        for i in range(ITEMS)
    ]
    return "\n".join(json.dumps(line) for line in [{"testSet": identity}, *math, *recall]) + "\n"


def knowing(test_set: Path, correct: dict[str, float]) -> Behaviour:
    """A double that answers the set's items, right in `correct`'s share per capability."""
    return Behaviour(answers=Answers(test_set=str(test_set), correct=correct))


@contextmanager
def evaluated(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    tmp_path: Path,
    candidate: dict[str, float],
    test_set_source: Json | None = None,
    **gate: Any,
) -> Iterator[Scenario]:
    """The gated rollout, its candidate right in `candidate`'s share of each capability's items; the
    test set from a ConfigMap unless `test_set_source` says where else; `gate`: more of spec.gate."""
    dated = datetime.now(UTC) - timedelta(days=2)
    test_set = tmp_path / "qa.jsonl"
    test_set.write_text(qa_test_set(dated))
    create(
        api_client,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "qa-set", "namespace": namespace},
            "data": {"set.jsonl": test_set.read_text()},
        },
    )
    incumbent = knowing(test_set, INCUMBENT)
    with serving(
        local_bed, api_client, namespace, knowing(test_set, candidate), incumbent=incumbent, rps=20
    ) as scenario:
        services = {
            f"http://{name}.{namespace}.svc:8000": scenario.fleet.urls(name)[0]
            for name in ("chat-v1", "chat-v2")
        }
        with CheckPods(api_client, namespace, tmp_path, services) as pods:
            check = {
                "name": "quality",
                "evaluator": {
                    "testSet": test_set_source or {"configMap": {"name": "qa-set", "key": "set.jsonl"}},
                    "concurrency": 4,
                },
                "timeout": "2m",
                "policy": POLICY,
            }
            scenario.apply(gated_rollout(namespace, [check], [{"setWeight": 50}], **gate))
            yield scenario
            assert pods.failure is None, pods.failure


def ended(scenario: Scenario) -> ModelRolloutStatus:
    ends = (Phase.SUCCEEDED, Phase.FAILED, Phase.ROLLED_BACK)
    return scenario.wait_for_status("the rollout to end", lambda s: s.phase in ends, timeout=120)


BETTER = {"math": 0.88, "recall": 0.84}


def passed_as_better(final: ModelRolloutStatus) -> CheckStatus:
    """The one check of a rollout whose candidate is BETTER: passed, and the gate a canary."""
    assert final.phase is Phase.SUCCEEDED, final.message
    assert final.gate is not None and final.gate.decision is GateDecision.CANARY
    (check,) = final.gate.checks
    assert (check.state, check.verdict) == (CheckState.MEASURED, Verdict.PASS), check.message
    measured = {s.name: (s.candidate, s.incumbent, s.samples) for s in check.scores}
    assert measured == {"math": (0.88, 0.8, ITEMS), "recall": (0.84, 0.8, ITEMS)}
    return check


def test_the_evaluator_passes_a_better_candidate_as_a_canary(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    with evaluated(local_bed, api_client, namespace, tmp_path, BETTER) as scenario:
        check = passed_as_better(ended(scenario))
        assert check.test_set is not None and check.test_set.name == "qa"
