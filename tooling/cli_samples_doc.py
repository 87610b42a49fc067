"""The sample output of `modelgate status` in docs/getting-started.md: examples/rollout-good.yaml at
its second step, its metrics judged by the engine's own `evaluate` on fixed query results and shown
by the CLI's own renderer, so the page shows what the command prints today."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import yaml
from rich.console import Console

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase
from modelgate.cli.render.rollout import render_status
from modelgate.core.metric_verdicts import evaluate
from modelgate.core.results import AnalysisRun, MetricQuery, QueryResult

EXAMPLE = Path("examples/rollout-good.yaml")
NAMESPACE = "serving"
AT = datetime(2026, 12, 2, 13, 52, 7, tzinfo=UTC)
WIDTH = 80  # a terminal's, or a log file's
CANDIDATE_REQUESTS = 120.0
# What Prometheus answered for each metric of the example: no errors, a P99 of 0.297 s, no refusals.
MEASURED = {"error-rate": 0.0, "p99-latency": 0.297, "refusal-rate": 0.0}


def status_sample(root: Path) -> list[str]:
    """`modelgate status chat -n serving` as it prints at step 1 (weight 30, not yet live)."""
    manifest = yaml.safe_load((root / EXAMPLE).read_text())
    spec = ModelRolloutSpec.model_validate(manifest["spec"])
    assert spec.analysis is not None, f"{EXAMPLE} has no spec.analysis to show"
    measured = {name: MetricQuery("", QueryResult(value, sample_count=1)) for name, value in MEASURED.items()}
    run = AnalysisRun(AT, QueryResult(CANDIDATE_REQUESTS, sample_count=1), measured)
    evaluation = evaluate(spec.analysis, run, previous=())
    status = ModelRolloutStatus(
        phase=Phase.PROGRESSING,
        current_step_index=1,
        current_weight=30,
        analysis=evaluation.metrics,
        message="step 1: waiting for weight 30 to be live",
    )
    body = {
        "metadata": {"namespace": NAMESPACE, "name": manifest["metadata"]["name"]},
        "spec": manifest["spec"],
        "status": status.to_patch(),
    }
    console = Console(width=WIDTH, record=True, file=io.StringIO(), color_system=None)
    console.print(render_status(body, live_weights=(70, 30)))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    return ["```text", f"$ modelgate status {body['metadata']['name']} -n {NAMESPACE}", *lines, "```"]
