"""`modelgate status` shows what a comparison and a sequential test decided on."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from rich.console import Console

from modelgate.api import (
    BreachRule,
    ConfidenceBounds,
    MetricAnalysis,
    ModelRolloutStatus,
    QuantileBounds,
    QuantileEvidence,
    RollbackReason,
    SequentialEvidence,
    Verdict,
)
from modelgate.cli.render.rollout import render_status

AT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def shown(metrics: list[dict], records: tuple[MetricAnalysis, ...] | ModelRolloutStatus) -> str:
    status = records if isinstance(records, ModelRolloutStatus) else ModelRolloutStatus(analysis=records)
    body = {
        "metadata": {"namespace": "serving", "name": "chat"},
        "spec": {
            "incumbent": {"deployment": "chat-v1"},
            "candidate": {"deployment": "chat-v2"},
            "steps": [{"setWeight": 10}],
            "analysis": {"metrics": metrics},
        },
        "status": status.to_patch(),
    }
    console = Console(width=250, record=True)
    console.print(render_status(body))
    return console.export_text()


def test_a_comparison_shows_both_values_and_the_rule() -> None:
    record = MetricAnalysis(name="ttft", verdict=Verdict.FAIL, time=AT, value=2.0, incumbent_value=1.0)
    text = shown([{"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.2}}], (record,))
    row = next(line for line in text.splitlines() if line.strip("│ ").startswith("ttft"))
    assert "2" in row and "1 " in row and "1.2 x incumbent" in row and "Fail" in row


def test_a_sequential_test_shows_its_evidence_against_the_bar() -> None:
    evidence = SequentialEvidence(
        log_likelihood_ratios=(1.0,),
        log_evidence=math.log(4.0),
        candidate_events=3,
        candidate_requests=40,
        incumbent_events=4,
        incumbent_requests=360,
    )
    record = MetricAnalysis(name="errors", verdict=Verdict.PASS, time=AT, value=0.01, sequential=evidence)
    metric = {"name": "errors", "preset": "errorRate", "sequential": {"alpha": 0.05}, "dryRun": True}
    text = shown([metric], (record,))
    assert "evidence 4 of 20" in text
    assert "sequential test, alpha 0.05 (dry run)" in text


def test_a_comparison_breach_shows_its_effective_bound_from_the_status_fields() -> None:
    record = MetricAnalysis(name="ttft", verdict=Verdict.FAIL, time=AT, value=0.498, incumbent_value=0.2474)
    reason = RollbackReason(
        time=AT,
        # The message says nothing of the bound: what is shown is read from the fields.
        message="metric ttft failed",
        metric="ttft",
        value=0.498,
        threshold=0.3711,
        rule=BreachRule.MAX_RATIO,
        incumbent_value=0.2474,
    )
    status = ModelRolloutStatus(analysis=(record,), rollback_reason=reason)
    text = shown([{"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.5}}], status)
    line = next(line for line in text.splitlines() if "rule MaxRatio" in line)
    assert "0.498" in line and "bound 0.3711" in line and "incumbent 0.2474" in line


def test_a_sequential_breach_and_a_waiting_margin_show_the_interval_and_evidence_from_fields() -> None:
    bounds = ConfidenceBounds(
        alpha=0.05, rate_ratio_lower=1.47, rate_ratio_upper=3.83, log_evidence=math.log(31.0)
    )
    evidence = SequentialEvidence(
        log_likelihood_ratios=(),
        log_evidence=0.0,  # what is shown is read from `bounds`, not from this or the message
        candidate_events=30,
        candidate_requests=1000,
        incumbent_events=90,
        incumbent_requests=9000,
        bounds=bounds,
    )
    record = MetricAnalysis(name="errors", verdict=Verdict.FAIL, time=AT, value=0.03, sequential=evidence)
    reason = RollbackReason(
        time=AT,
        message="metric errors failed",
        metric="errors",
        rule=BreachRule.SEQUENTIAL,
        threshold=1.0,
        bounds=bounds,
    )
    metric = {"name": "errors", "preset": "errorRate", "sequential": {"alpha": 0.05, "margin": 1.25}}
    text = shown([metric], ModelRolloutStatus(analysis=(record,), rollback_reason=reason))
    line = next(line for line in text.splitlines() if "rule Sequential" in line)
    assert "bound 1" in line and "(1.47, 3.83)" in line and "evidence of harm 31 of 20" in line
    assert "passes below 1.25 x incumbent" in text


def test_a_latency_breach_with_confidence_shows_each_sides_quantile_bounds_from_fields() -> None:
    bounds = QuantileBounds(
        alpha=0.025,
        quantile=0.99,
        candidate_lower=0.08,
        candidate_upper=0.1,
        incumbent_lower=0.04,
        incumbent_upper=0.06,
    )
    evidence = QuantileEvidence(
        boundaries=(0.04, 0.06, 0.08, 0.1),
        candidate_requests=448,
        incumbent_requests=448,
        candidate_exceeding=(448, 448, 30, 0),
        incumbent_exceeding=(400, 0, 0, 0),
        bounds=bounds,
    )
    # The messages say nothing of the bounds: what is shown is read from the fields.
    record = MetricAnalysis(name="ttft", verdict=Verdict.FAIL, time=AT, value=0.09, quantiles=evidence)
    reason = RollbackReason(
        time=AT,
        message="metric ttft failed",
        metric="ttft",
        rule=BreachRule.MAX_RATIO,
        threshold=1.2,
        quantile_bounds=bounds,
    )
    metric = {"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.2, "confidence": {}}}
    text = shown([metric], ModelRolloutStatus(analysis=(record,), rollback_reason=reason))
    line = next(line for line in text.splitlines() if "rule MaxRatio" in line)
    assert "candidate in (0.08, 0.1]s" in line and "incumbent in (0.04, 0.06]s" in line
    row = next(line for line in text.splitlines() if line.lstrip().startswith("ttft"))
    assert "P99 candidate in (0.08, 0.1]s" in row
