"""`modelgate status` (and the kubectl plugin) show the gate: each check, its test set's version, every
score beside its policy, the win rate's bound, the verdicts and the decision."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import Console

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.api.gate import GateCheck, GateSpec
from modelgate.api.gate_result import GateResult
from modelgate.api.gate_status import CheckState, CheckStatus, GateStatus
from modelgate.cli.render.rollout import render_status
from modelgate.core.gate_judgement import decide_gate, judge_result

AT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
CHECK = {
    "name": "quality",
    "job": {"image": "check:1"},
    "policy": {"minSamples": 20, "maxDrop": 0.05, "winRate": {"minLowerBound": 0.5}},
}
RESULT = {
    "testSet": {"name": "qa", "version": "2026-11-28", "date": "2026-11-28T00:00:00Z"},
    "scores": [
        {"name": "math", "candidate": 0.9, "incumbent": 0.8, "samples": 50},
        {"name": "coding", "candidate": 0.7, "incumbent": 0.8, "samples": 50},
    ],
    "winRate": {"wins": 55, "ties": 0, "losses": 45},
}


def shown(check: dict[str, Any] = CHECK, result: dict[str, Any] = RESULT) -> str:
    running = CheckStatus(name="quality", job="chat-quality-1", state=CheckState.RUNNING)
    judged = judge_result(GateCheck.model_validate(check), running, GateResult.model_validate(result), AT)
    outcome = decide_gate(GateSpec.model_validate({"checks": [check]}), (judged,))
    assert outcome is not None
    gate = GateStatus(
        started_at=AT, run="1-x", checks=(judged,), decision=outcome.decision, message=outcome.message
    )
    body = {
        "metadata": {"namespace": "serving", "name": "chat"},
        "spec": {"incumbent": {"deployment": "chat-v1"}, "candidate": {"deployment": "chat-v2"}, "steps": []},
        "status": ModelRolloutStatus(phase=Phase.FAILED, gate=gate).to_patch(),
    }
    console = Console(width=300, record=True)
    console.print(render_status(body))
    return console.export_text()


def row(text: str, first: str) -> str:
    return next(line for line in text.splitlines() if line.strip("│ ").startswith(first))


def test_the_gate_shows_each_score_beside_its_policy_and_verdict() -> None:
    text = shown()
    assert "Gate: Reject" in text
    assert "qa 2026-11-28" in row(text, "quality")
    coding = row(text, "coding")
    assert "0.7" in coding and "0.8" in coding and "drop <= 0.05" in coding and "Fail" in coding
    assert "Pass" in row(text, "math")
    win_rate = row(text, "win rate")
    assert "bound >= 0.5" in win_rate and "55 won" in win_rate and "Fail" in win_rate


def test_the_gate_shows_both_sides_tokens_per_task_and_the_ratios_bound() -> None:
    check = {**CHECK, "policy": {**CHECK["policy"], "maxTokensRatio": 1.5}}
    tokens = [
        {
            "name": "math",
            "candidate": {"tokens": 2400, "counted": 50},
            "incumbent": {"tokens": 1200, "counted": 50},
        },
        {
            "name": "coding",
            "candidate": {"tokens": 0, "counted": 0, "uncounted": 50},
            "incumbent": {"tokens": 500, "counted": 50},
        },
    ]

    text = shown(check, {**RESULT, "tokens": tokens})

    math = row(text, "tokens/task math")
    assert "48" in math and "24" in math and "ratio 2" in math
    coding = row(text, "tokens/task coding")
    assert "unknown" in coding and "50 answers without a count" in coding
    overall = row(text, "tokens/task (all)")
    assert "ratio <= 1.5" in overall and "Inconclusive" in overall


def test_the_gate_shows_both_sides_requests_and_the_capabilities_that_failed_some() -> None:
    def side(asked: int, answered: int) -> dict[str, int]:
        return {"asked": asked, "answered": answered}

    requests = {
        "candidate": side(100, 90),
        "incumbent": side(100, 100),
        "capabilities": [
            {"name": "math", "candidate": side(50, 40), "incumbent": side(50, 50)},
            {"name": "coding", "candidate": side(50, 50), "incumbent": side(50, 50)},
        ],
    }

    text = shown(result={**RESULT, "requests": requests})

    answered = row(text, "requests answered")
    assert "90 of 100" in answered and "100 of 100" in answered and "<= 0.05" in answered
    assert "Fail" in answered
    assert "40 of 50" in row(text, "requests math")
    assert "requests coding" not in text  # nothing of it failed
