"""The gate's built-in evaluator on the bed: the operator's Job runs `modelgate eval` (as a local
process standing in for its Pod) against the two model Services, reaching the doubles, with the test
set mounted from a ConfigMap; its result decides the gate. A candidate double's refusals are what
make it worse: a refusal answers no test item (bench/test_gate_evaluator.py rejects one so)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase, Verdict
from modelgate.api.gate_status import CheckState, GateDecision
from testbed.check_pods import CheckPods
from testbed.localcluster import LocalCluster
from testbed.model_server_double import ANSWER, Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.gate import gated_rollout
from tests.support.kube import create
from tests.support.scenario import Scenario, serving

ITEMS = 30
POLICY = {"minSamples": 20, "maxDrop": 0.05, "maxTestSetAge": "720h"}


def qa_test_set(version_date: datetime) -> str:
    """Every item asks for an answer; the doubles' canned answer passes it, a refusal does not."""
    header = {
        "testSet": {
            "name": "qa",
            "version": version_date.strftime("%Y-%m-%d"),
            "date": version_date.isoformat(),
        }
    }
    pattern = " ".join(ANSWER.split()[:4])
    items = [
        {"id": f"a{i}", "capability": "answers", "prompt": f"Question {i}?", "check": {"regex": pattern}}
        for i in range(ITEMS)
    ]
    return "\n".join(json.dumps(line) for line in [header, *items]) + "\n"


@contextmanager
def evaluated(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    tmp_path: Path,
    candidate: Behaviour,
) -> Iterator[Scenario]:
    dated = datetime.now(UTC) - timedelta(days=2)
    create(
        api_client,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "qa-set", "namespace": namespace},
            "data": {"set.jsonl": qa_test_set(dated)},
        },
    )
    with serving(local_bed, api_client, namespace, candidate, rps=20) as scenario:
        services = {
            f"http://{name}.{namespace}.svc:8000": scenario.fleet.urls(name)[0]
            for name in ("chat-v1", "chat-v2")
        }
        with CheckPods(api_client, namespace, tmp_path, services) as pods:
            check = {
                "name": "quality",
                "evaluator": {
                    "testSet": {"configMap": {"name": "qa-set", "key": "set.jsonl"}},
                    "concurrency": 4,
                },
                "timeout": "2m",
                "policy": POLICY,
            }
            scenario.apply(gated_rollout(namespace, [check], [{"setWeight": 50}]))
            yield scenario
            assert pods.failure is None, pods.failure


def ended(scenario: Scenario) -> ModelRolloutStatus:
    ends = (Phase.SUCCEEDED, Phase.FAILED, Phase.ROLLED_BACK)
    return scenario.wait_for_status("the rollout to end", lambda s: s.phase in ends, timeout=120)


def test_the_evaluator_passes_a_candidate_as_good_as_the_incumbent(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    with evaluated(local_bed, api_client, namespace, tmp_path, Behaviour()) as scenario:
        final = ended(scenario)
        assert final.phase is Phase.SUCCEEDED, final.message
        assert final.gate is not None and final.gate.decision is GateDecision.CANARY
        (check,) = final.gate.checks
        assert (check.state, check.verdict) == (CheckState.MEASURED, Verdict.PASS), check.message
        (answers,) = check.scores
        assert (answers.name, answers.candidate, answers.incumbent, answers.samples) == (
            "answers",
            1.0,
            1.0,
            ITEMS,
        )
        assert check.test_set is not None and check.test_set.name == "qa"
