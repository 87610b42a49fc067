"""Gated rollouts for the cluster tests: checks run by testbed/check_script.py (a team's own check
that writes the GateResult it is given), and the results they write."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from modelgate.api.gate_result import GATE_RESULT_VERSION
from testbed.check_pods import BED_CHECK_IMAGE
from testbed.manifests import Manifest, model_rollout

Json = dict[str, Any]


def gate_result(
    *scores: Json, win_rate: tuple[int, int, int] | None = None, test_set_age: timedelta = timedelta(days=1)
) -> Json:
    dated = datetime.now(UTC) - test_set_age
    result: Json = {
        "apiVersion": GATE_RESULT_VERSION,
        "testSet": {"name": "qa", "version": dated.strftime("%Y-%m-%d"), "date": dated.isoformat()},
        "scores": list(scores),
        "summary": "written by testbed.check_script",
    }
    if win_rate is not None:
        wins, ties, losses = win_rate
        result["winRate"] = {"wins": wins, "ties": ties, "losses": losses, "judge": "judge-double"}
    return result


def score(name: str, candidate: float, incumbent: float, samples: int = 50) -> Json:
    return {"name": name, "candidate": candidate, "incumbent": incumbent, "samples": samples}


def script_check(
    name: str,
    result: Json | str = "",
    *,
    exit_code: int = 0,
    hang: bool = False,
    wait_for: Path | None = None,
    image: str = BED_CHECK_IMAGE,
    **fields: Any,
) -> Json:
    """A custom Job check whose container writes `result` (a JSON document, or a string as it is), once
    `wait_for` exists when it is given."""
    args = ["-m", "testbed.check_script", "--result-file", "/dev/termination-log", f"--exit-code={exit_code}"]
    if wait_for is not None:
        args.append(f"--wait-for={wait_for}")
    args.append("--hang" if hang else f"--result={result if isinstance(result, str) else json.dumps(result)}")
    return {"name": name, "job": {"image": image, "command": ["python"], "args": args}, **fields}


def gated_rollout(namespace: str, checks: list[Json], steps: list[Json], **gate: Any) -> Manifest:
    rollout = model_rollout("chat", namespace, steps=steps)
    rollout["spec"]["gate"] = {"checks": checks, **gate}
    return rollout
