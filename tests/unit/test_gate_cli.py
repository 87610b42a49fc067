"""`modelgate gate`: the decision CI can run before applying a rollout, by the operator's policy code,
its exit code the decision. Run as CI runs it, as a process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelgate.api.gate_status import GateDecision
from modelgate.cli.gate_decide import EXIT_CODES, UNREADABLE
from testbed.manifests import model_rollout
from tests.support.cli import modelgate

GATE = {
    "checks": [
        {
            "name": "quality",
            "job": {"image": "registry.invalid/check:1"},
            "policy": {"minSamples": 20, "minScore": 0.7, "maxDrop": 0.05},
        }
    ],
    "full": {"allowed": True, "startAtStep": 1},
}


def manifest(tmp_path: Path, gate: dict[str, Any] = GATE) -> Path:
    rollout = model_rollout("chat", "serving", steps=[{"setWeight": 10}, {"setWeight": 100}])
    rollout["spec"]["gate"] = gate
    path = tmp_path / "rollout.yaml"
    path.write_text(yaml.safe_dump(rollout))
    return path


def result(tmp_path: Path, candidate: float, samples: int = 50) -> Path:
    path = tmp_path / f"result-{candidate}-{samples}.json"
    scores = [{"name": "math", "candidate": candidate, "incumbent": 0.8, "samples": samples}]
    path.write_text(json.dumps({"scores": scores}))
    return path


@pytest.mark.parametrize(
    ("candidate", "samples", "decision"),
    [
        (0.82, 50, GateDecision.FULL),  # every check passed, a full release is allowed
        (0.82, 5, GateDecision.CANARY),  # too few samples: Inconclusive, a canary at most
        (0.70, 50, GateDecision.REJECT),  # 0.1 below the incumbent, maxDrop 0.05
    ],
)
def test_the_exit_code_is_the_operators_decision(
    tmp_path: Path, candidate: float, samples: int, decision: GateDecision
) -> None:
    ran = modelgate(
        None,
        "gate",
        "-f",
        str(manifest(tmp_path)),
        "--result",
        f"quality={result(tmp_path, candidate, samples)}",
    )
    assert ran.returncode == EXIT_CODES[decision], ran.stdout + ran.stderr
    assert decision.value in ran.stdout


def test_a_check_without_a_result_and_a_malformed_result_name_what_is_wrong(tmp_path: Path) -> None:
    rollout = manifest(tmp_path)
    missing = modelgate(None, "gate", "-f", str(rollout))
    assert missing.returncode == UNREADABLE
    assert "quality" in missing.stdout
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"scores": [{"name": "math", "candidate": "high"}]}))
    malformed = modelgate(None, "gate", "-f", str(rollout), "--result", f"quality={broken}")
    assert malformed.returncode == UNREADABLE
    assert "result.scores[0].candidate" in malformed.stdout.replace("\n", "")
