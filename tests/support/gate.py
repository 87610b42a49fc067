"""Gated rollouts for the cluster tests: checks run by testbed/check_script.py (a team's own check
that writes the GateResult it is given), and the results they write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.api.gate_result import GATE_RESULT_VERSION
from modelgate.api.gate_status import GateDecision
from modelgate.cli.gate_decide import EXIT_CODES
from modelgate.kube.labels import label_value
from testbed.answering import Answers
from testbed.check_pods import BED_CHECK_IMAGE, CheckPods
from testbed.localcluster import LocalCluster
from testbed.manifests import Manifest, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.scenario import Scenario, serving

Json = dict[str, Any]
POLICY = {"minSamples": 20, "maxDrop": 0.05, "maxTestSetAge": "720h"}
ITEMS = 25  # per capability of qa_test_set
ENDED = (Phase.SUCCEEDED, Phase.FAILED, Phase.ROLLED_BACK)


@pytest.fixture
def check_pods(api_client: client.ApiClient, namespace: str, tmp_path: Path) -> Iterator[CheckPods]:
    """The bed running the namespace's check Pods."""
    with CheckPods(api_client, namespace, tmp_path / "pods") as pods:
        yield pods
        assert pods.failure is None, pods.failure


@pytest.fixture
def scenario(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    check_pods: CheckPods,
) -> Iterator[Scenario]:
    """Two served models behind a route, with traffic, and the bed running the check Pods."""
    with serving(local_bed, api_client, namespace, Behaviour(), rps=20) as served:
        yield served


def ended(scenario: Scenario, name: str = "chat") -> ModelRolloutStatus:
    return scenario.wait_for_status("the rollout to end", lambda s: s.phase in ENDED, timeout=120, name=name)


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


def decided_outside_the_cluster(rollout: Manifest, pods: CheckPods, workdir: Path) -> GateDecision:
    """The decision of `modelgate gate`, run as CI runs it, on the rollout's manifest and the results
    its check Pods wrote to their termination messages (what the operator read)."""
    workdir.mkdir()
    manifest = workdir / "rollout.yaml"
    manifest.write_text(yaml.safe_dump(rollout))
    results = []
    for check in rollout["spec"]["gate"]["checks"]:
        result = workdir / f"{check['name']}.json"
        result.write_text(pods.termination_messages[label_value(check["name"])])
        results += ["--result", f"{check['name']}={result}"]
    ran = modelgate(None, "gate", "-f", str(manifest), *results)
    decisions = {code: decision for decision, code in EXIT_CODES.items()}
    assert ran.returncode in decisions, ran.stdout + ran.stderr
    return decisions[ran.returncode]


def qa_test_set(dated: datetime, items: int = ITEMS) -> str:
    """`items` of each of two capabilities whose reference answers the doubles know
    (testbed/answering.py)."""
    identity = {"name": "qa", "version": dated.strftime("%Y-%m-%d"), "date": dated.isoformat()}
    math = [
        {"id": f"m{i}", "capability": "math", "prompt": f"What is {i} + 7?", "check": {"number": i + 7}}
        for i in range(items)
    ]
    recall = [
        {
            "id": f"r{i}",
            "capability": "recall",
            "prompt": f"Repeat R{i:03d}.",
            "check": {"exact": f"R{i:03d}"},
        }
        for i in range(items)
    ]
    return "\n".join(json.dumps(line) for line in [{"testSet": identity}, *math, *recall]) + "\n"


def knowing(test_set: Path, correct: dict[str, float]) -> Behaviour:
    """A double that answers the set's items, right in `correct`'s share per capability."""
    return Behaviour(answers=Answers(test_set=str(test_set), correct=correct))
