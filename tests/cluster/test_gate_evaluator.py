"""The gate's built-in evaluator on the bed: the operator's Job runs `modelgate eval` (as a local
process standing in for its Pod) against the two model Services, reaching the doubles, with the test
set mounted from a ConfigMap; its result decides the gate. The doubles know the set's items and
answer a configured share of each capability right (testbed/answering.py); bench/test_gate_evaluator.py
has the built-in evaluator reject a candidate that regressed one capability."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase, Verdict
from modelgate.api.gate_status import CheckState, CheckStatus, GateDecision
from testbed.check_pods import CheckPods
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.support.gate import ITEMS, Json, gated_rollout, knowing, qa_test_set
from tests.support.kube import create
from tests.support.scenario import Scenario, serving

POLICY = {"minSamples": 20, "maxDrop": 0.05, "maxTestSetAge": "720h"}
INCUMBENT = {"math": 0.8, "recall": 0.8}
TEST_SET_FILE = "qa.jsonl"


def quality(test_set: Json, parallelism: int = 1) -> Json:
    """The check `quality` of the qa set from `test_set` (a JsonlSource)."""
    return {
        "name": "quality",
        "evaluator": {"testSet": test_set, "concurrency": 4},
        "timeout": "2m",
        "policy": POLICY,
        "parallelism": parallelism,
    }


QUALITY = quality({"configMap": {"name": "qa-set", "key": "set.jsonl"}})


@contextmanager
def evaluated(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    tmp_path: Path,
    candidate: dict[str, float],
    *,
    items: int = ITEMS,
    checks: Sequence[Mapping[str, Any]] = (QUALITY,),
    replay: str = "",
    set_in_config_map: bool = True,
    results: Json | None = None,
    tokens_per_word: int = 1,
) -> Iterator[Scenario]:
    """The gated rollout, its candidate right in `candidate`'s share of each capability's items
    (its tokenizer `tokens_per_word` tokens per word of an answer, the incumbent's one);
    ConfigMap qa-set holds the `replay` (key replay.jsonl) and, with `set_in_config_map` (a set over
    1 MiB does not fit), the test set (key set.jsonl), which is file TEST_SET_FILE of `tmp_path`;
    `results`: spec.gate.results."""
    dated = datetime.now(UTC) - timedelta(days=2)
    test_set = tmp_path / TEST_SET_FILE
    test_set.write_text(qa_test_set(dated, items))
    create(
        api_client,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "qa-set", "namespace": namespace},
            "data": {
                "replay.jsonl": replay,
                **({"set.jsonl": test_set.read_text()} if set_in_config_map else {}),
            },
        },
    )
    incumbent = knowing(test_set, INCUMBENT)
    with serving(
        local_bed,
        api_client,
        namespace,
        knowing(test_set, candidate).model_copy(update={"tokens_per_word": tokens_per_word}),
        incumbent=incumbent,
        rps=20,
    ) as scenario:
        services = {
            f"http://{name}.{namespace}.svc:8000": scenario.fleet.urls(name)[0]
            for name in ("chat-v1", "chat-v2")
        }
        with CheckPods(api_client, namespace, tmp_path, services) as pods:
            kept = {} if results is None else {"results": results}
            scenario.apply(gated_rollout(namespace, list(checks), [{"setWeight": 50}], **kept))
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


def test_model_urls_that_answer_404_fail_the_gate_and_the_candidate_never_gets_traffic(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    """The measured bug: both sides answered 404 to every request, scored 0 against 0, and the gate
    released the candidate. `onError: Inconclusive` would make a check that could not measure a
    canary: this one measured, and fails."""
    wrong = {
        side: {"url": f"http://{name}.{namespace}.svc:8000/wrong/v1"}
        for side, name in (("candidate", "chat-v2"), ("incumbent", "chat-v1"))
    }
    check = {**QUALITY, "evaluator": {**QUALITY["evaluator"], **wrong}, "onError": "Inconclusive"}
    with evaluated(local_bed, api_client, namespace, tmp_path, BETTER, checks=[check]) as scenario:
        final = ended(scenario)

        assert final.phase is Phase.FAILED, final.message
        assert final.gate is not None and final.gate.decision is GateDecision.REJECT
        (judged,) = final.gate.checks
        assert (judged.state, judged.verdict) == (CheckState.MEASURED, Verdict.FAIL), judged.message
        requests = judged.requests
        assert requests is not None and requests.verdict is Verdict.FAIL
        asked = 2 * ITEMS  # math and recall items, to each side
        for side in (requests.candidate, requests.incumbent):
            assert (side.asked, side.answered, side.failed) == (asked, 0, asked)
        assert {c.name: c.candidate.failed for c in requests.capabilities} == {"math": ITEMS, "recall": ITEMS}
        message = judged.message or ""
        assert "candidate" in message and "incumbent" in message and str(asked) in message
        assert scenario.recorder.candidate_weights() == [0]
        assert scenario.traffic.driver.stats.sent["chat-v2"] == 0
