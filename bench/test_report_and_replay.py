"""`modelgate report` and `modelgate replay` on the bed: a rollout whose candidate degrades at its last
step is rolled back; its report, rendered by headless Chromium, draws the weights the route had and
the breaching metric crossing its threshold; a replay of the same history through the engine rolls
back at the same step, and the incumbent replayed against itself (A/A) fires no threshold."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from modelgate.api import Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.page import read_page
from tests.support.scenario import serving

# A minute or more each on the bed: run by `make bench`, beside the demo (docs/testing.md).
pytestmark = pytest.mark.bench

STEPS: list[dict[str, Any]] = [
    {"setWeight": 20},
    {"pause": {"duration": "3s"}},
    {"setWeight": 50},
    {"pause": {}},
]
HELD = 3  # the step that waits for a promote; the candidate degrades there


def _changes(values: list[float]) -> list[float]:
    return [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


def test_report_and_replay_of_a_rolled_back_rollout(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=STEPS,
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
    )
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        applied_at = time.time()
        scenario.apply(manifest)
        # Three passing evaluations at the held step first: a replay from the same start is there too.
        scenario.wait_for_status(
            "three passes at the held step",
            lambda s: (
                s.current_step_index == HELD
                and s.step_started_at is not None
                and all(
                    sum(x.verdict is Verdict.PASS and x.time > s.step_started_at for x in m.history) >= 3
                    for m in s.analysis
                )
            ),
        )
        scenario.fleet.set_behaviour("chat-v2", Behaviour(error_rate=0.3))
        final = scenario.wait_for_status("a rollback", lambda s: s.phase is not Phase.PAUSED)
        assert final.phase is Phase.ROLLED_BACK and final.rollback_reason is not None, final.message
        assert final.rollback_reason.metric == "error-rate"
        route_weights = scenario.recorder.weights_until(0)
    assert route_weights == [0, 20, 50, 0]

    page_file, png = tmp_path / "chat.html", tmp_path / "chat.png"
    made = modelgate(
        local_bed.kubeconfig, "report", "chat", "-n", namespace, "-o", str(page_file), "--png", str(png)
    )
    assert made.returncode == 0, made.stderr
    assert png.read_bytes().startswith(b"\x89PNG")
    page = read_page(page_file)
    weights = page.chart("weights")
    assert _changes(weights.values("weight")) == route_weights
    assert len(weights.rule_times("steps")) == len(STEPS)
    assert len(weights.rule_times("rollbacks")) == 1
    breached = page.chart("metric error-rate")
    threshold = breached.rule_values("bound")[0]
    assert threshold == pytest.approx(final.rollback_reason.threshold, rel=1e-3)
    drawn = breached.values("candidate")
    assert min(drawn) <= threshold < max(drawn)
    assert "error-rate" in page.text

    # The same history, replayed from just before the rollout was applied to a little after its
    # rollback: the simulated rollout is Inconclusive until the candidate had traffic, as the real one.
    start = applied_at - 1
    end = final.rollback_reason.time.timestamp() + 3
    rollout_file = tmp_path / "chat.yaml"
    rollout_file.write_text(yaml.safe_dump(manifest))
    window = ["--from", _rfc3339(start), "--to", _rfc3339(end), "-o", "json"]
    replayed = modelgate(None, "replay", "-f", str(rollout_file), *window)
    assert replayed.returncode == 0, replayed.stderr
    result = json.loads(replayed.stdout)
    assert result["rollback"] is not None, result
    assert (result["rollback"]["step"], result["rollback"]["metric"]) == (HELD, "error-rate")

    # A/A over the healthy part (the incumbent never degraded, but stop at the candidate's breach).
    healthy = [
        "--from",
        _rfc3339(start),
        "--to",
        _rfc3339(final.rollback_reason.time.timestamp()),
        "-o",
        "json",
    ]
    aa = modelgate(None, "replay", "-f", str(rollout_file), *healthy, "--aa", "--stride", "2s")
    assert aa.returncode == 0, aa.stderr
    runs = json.loads(aa.stdout)
    assert len(runs["runs"]) >= 5 and runs["fired"] == {}


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(round(seconds), UTC).isoformat()
