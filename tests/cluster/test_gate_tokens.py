"""Tokens per task in the gate on the bed (issue 26, item 4): the built-in evaluator reads each
answer's `usage.completion_tokens` from the model-server doubles, and `maxTokensRatio: 1.5` rejects a
candidate that answers exactly as well as the incumbent with twice its tokens (a tokenizer of two
tokens per word), while its twin with equal tokens, measured in two shards, passes. The doubles
rather than the llm-d simulator: they know the test set's answers, so quality is equal by
construction and only the tokens differ."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api import Phase, Verdict
from modelgate.api.gate_status import GateDecision
from testbed.answering import WRONG_ANSWER
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.cluster.test_gate_evaluator import INCUMBENT, POLICY, QUALITY, ended, evaluated
from tests.support.gate import ITEMS

# Both sides answer the same share of each capability right: a right answer is one word (a number,
# or a code like R007), a wrong one WRONG_ANSWER and the version's signature.
RIGHT = round(ITEMS * 0.8)
WORDS_PER_TASK = (RIGHT * 1 + (ITEMS - RIGHT) * (len(WRONG_ANSWER.split()) + 1)) / ITEMS


@pytest.mark.parametrize(
    ("tokens_per_word", "parallelism", "phase", "decision", "verdict"),
    [
        (2, 1, Phase.FAILED, GateDecision.REJECT, Verdict.FAIL),
        (1, 2, Phase.SUCCEEDED, GateDecision.CANARY, Verdict.PASS),
    ],
)
def test_max_tokens_ratio_rejects_a_candidate_with_twice_the_tokens_and_passes_its_twin(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
    tokens_per_word: int,
    parallelism: int,
    phase: Phase,
    decision: GateDecision,
    verdict: Verdict,
) -> None:
    check = {**QUALITY, "parallelism": parallelism, "policy": {**POLICY, "maxTokensRatio": 1.5}}
    with evaluated(
        local_bed, api_client, namespace, tmp_path, INCUMBENT, checks=[check], tokens_per_word=tokens_per_word
    ) as scenario:
        final = ended(scenario)
        assert final.phase is phase, final.message
        assert final.gate is not None and final.gate.decision is decision
        (quality,) = final.gate.checks
        assert quality.verdict is verdict, quality.message
        # Equal quality: only the tokens decide.
        assert all(s.verdict is Verdict.PASS and s.candidate == s.incumbent for s in quality.scores)
        # The figures are hand arithmetic from what the doubles answered.
        shown = {t.name: (t.candidate, t.incumbent, t.candidate_counted, t.uncounted) for t in quality.tokens}
        mine = WORDS_PER_TASK * tokens_per_word
        assert shown == {
            name: (pytest.approx(mine), pytest.approx(WORDS_PER_TASK), ITEMS, 0)
            for name in ("math", "recall")
        }
        overall = quality.overall_tokens
        assert overall is not None and overall.verdict is verdict
        assert overall.ratio == pytest.approx(tokens_per_word) and overall.max_ratio == 1.5
        if phase is Phase.FAILED:
            assert scenario.recorder.candidate_weights() == [0]  # no weight was ever written
