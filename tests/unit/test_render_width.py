"""`modelgate status` (and the demo's live view) at the console's width: at 80 columns, a terminal's or a
log file's, each metric is one line of the analysis table and the long texts wrap under it; a wider
console shows more in the table. Nothing is left out at any width."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from rich.console import Console

from modelgate.api import (
    BreachTrace,
    MetricAnalysis,
    ModelRolloutStatus,
    Phase,
    PodValue,
    RollbackReason,
    Verdict,
)
from modelgate.cli.render.rollout import render_status

AT = datetime(2026, 12, 2, 12, 0, 4, tzinfo=UTC)
BAD_POD = "chat-v3-7d9f8b6c5-abcde"
QUERY = (
    '(sum(rate(http_requests_total{namespace="demo",pod=~"chat-v3-[a-z0-9]+-[a-z0-9]+",status=~"5.."}[1m]))'
    ' or vector(0)) / sum(rate(http_requests_total{namespace="demo",pod=~"chat-v3-[a-z0-9]+-[a-z0-9]+"}[1m]))'
)
DETAIL = "0.1012 is above the maximum 0.02; the candidate failed 41 of its 405 requests in the last minute"
REASON = "metric error-rate: 0.1012 is above the maximum 0.02; 1 breach, failureLimit 0"
VERDICTS = {"error-rate": "Fail", "ttft-p99": "Pass", "latency-p99": "Inconclusive"}


def rolled_back() -> dict[str, object]:
    metrics = [
        {"name": "error-rate", "preset": "errorRate", "max": 0.02},
        {"name": "ttft-p99", "preset": "ttftP99", "compare": {"maxRatio": 1.5}},
        {"name": "latency-p99", "preset": "latencyP99", "max": 1.0},
    ]
    analysis = (
        MetricAnalysis(
            name="error-rate", verdict=Verdict.FAIL, time=AT, value=0.101234, failures=1, message=DETAIL
        ),
        MetricAnalysis(
            name="ttft-p99",
            verdict=Verdict.PASS,
            time=AT,
            value=0.312345,
            incumbent_value=0.201111,
            message="0.3123 <= 1.5 x the incumbent's 0.2011",
        ),
        MetricAnalysis(
            name="latency-p99", verdict=Verdict.INCONCLUSIVE, time=AT, message="the query returned no data"
        ),
    )
    reason = RollbackReason(
        time=AT,
        message=REASON,
        metric="error-rate",
        query=QUERY,
        traces=(BreachTrace(trace_id="a" * 32, pod=BAD_POD, value=1.0, time=AT),),
        pods=(PodValue(pod=BAD_POD, value=0.2),),
    )
    status = ModelRolloutStatus(
        phase=Phase.ROLLED_BACK, current_step_index=1, analysis=analysis, rollback_reason=reason
    )
    return {
        "metadata": {"namespace": "demo", "name": "chat"},
        "spec": {
            "incumbent": {"deployment": "chat-v2"},
            "candidate": {"deployment": "chat-v3"},
            "steps": [{"setWeight": 10}, {"pause": {"duration": "6s"}}],
            "analysis": {"metrics": metrics},
        },
        "status": status.to_patch(),
    }


def lines_at(width: int) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(render_status(rolled_back(), live_weights=(100, 0)))
    return console.export_text().splitlines()


def metric_rows(lines: list[str], name: str) -> list[str]:
    """The table's lines of a metric: those that start with its name and hold its verdict."""
    return [line for line in lines if line.split()[:1] == [name] and VERDICTS[name] in line.split()]


def normalised(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def unspaced(text: str) -> str:
    """Without any whitespace: a query without spaces is folded mid-word."""
    return "".join(text.split())


def test_at_80_columns_each_metric_is_one_line_and_the_long_texts_wrap_under_it() -> None:
    lines = lines_at(80)
    assert max(len(line) for line in lines) <= 80
    for name in VERDICTS:
        assert len(metric_rows(lines, name)) == 1, name
    (ttft,) = metric_rows(lines, "ttft-p99")
    assert "0.3123" in ttft and "0.2011" in ttft and "<= 1.5 x incumbent" in ttft
    (errors,) = metric_rows(lines, "error-rate")
    assert "<= 0.02" in errors and "1 (limit 0)" in errors
    text = normalised(lines)
    assert f"error-rate at 12:00:04: {DETAIL}" in text  # the time, too, when the table has no room for it
    assert f"Rolled back: {REASON}" in text
    assert unspaced(QUERY) in unspaced(text)
    assert BAD_POD in text and "a" * 32 in text


def test_a_wider_console_shows_the_time_in_the_table_and_the_detail_under_it() -> None:
    lines = lines_at(160)
    assert max(len(line) for line in lines) <= 160
    for name in VERDICTS:
        (row,) = metric_rows(lines, name)
        assert "12:00:04" in row
    assert f"error-rate: {DETAIL}" in normalised(lines)
    assert f"query: {QUERY}" in normalised(lines)


def test_a_console_wide_enough_shows_each_detail_in_its_metrics_row() -> None:
    lines = lines_at(250)
    (errors,) = metric_rows(lines, "error-rate")
    assert DETAIL in errors
    assert not any(line.startswith("error-rate:") for line in lines)


def test_a_rollout_failed_on_a_missing_route_shows_no_weights_and_no_empty_table() -> None:
    """It never had a route to weigh nor a metric judged: its message says why, and nothing else."""
    body = rolled_back()
    status = ModelRolloutStatus(phase=Phase.FAILED, message="HTTPRoute demo/chat not found")
    body["status"] = status.to_patch()
    console = Console(width=80, record=True, file=io.StringIO(), color_system=None)
    console.print(render_status(body))
    shown = console.export_text()
    assert "HTTPRoute demo/chat not found" in shown
    assert "Weights" not in shown and "not evaluated yet" not in shown
    assert "error-rate" not in shown  # no table of metrics that never ran
