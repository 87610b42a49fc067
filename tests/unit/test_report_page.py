"""`modelgate report`'s page, from a rolled-back rollout's spec, status, Events and ranges, rendered by
headless Chromium and read back: the weight line reaches the weights the route had, the breaching
metric's line crosses its threshold, and the steps, the rollback and its reason are on the page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from modelgate.api import parse_spec, parse_status
from modelgate.cli.report import report_timeline
from modelgate.cli.report_html import render_page
from modelgate.cli.timeline import EventRow
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.recorded import RecordedSeries
from testbed.manifests import SEED_METRICS, model_rollout
from tests.support.page import read_page

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _rolled_back() -> dict[str, Any]:
    body = model_rollout(
        "chat", "ml", steps=[{"setWeight": 20}, {"setWeight": 60}, {"pause": {}}],
        prometheus="http://prometheus:9090", metrics=SEED_METRICS, interval="2s",
    )  # fmt: skip
    body["metadata"]["creationTimestamp"] = _at(0)
    reason = {
        "time": _at(30), "metric": "error-rate", "value": 0.08, "threshold": 0.01, "query": "sum(rate(x[1m]))",
        "message": "metric error-rate: 0.08 is above the maximum 0.01; 1 breach(es), failureLimit 0",
        "traceIds": [{"traceId": "4bf92f3577b34da6", "pod": "chat-v2-abc-1"}],  # a field status may grow
    }  # fmt: skip
    body["status"] = {
        "phase": "RolledBack",
        "message": "rolled back: metric error-rate: 0.08 is above the maximum 0.01",
        "currentStepIndex": 1,
        "currentWeight": 0,
        "rollbackReason": reason,
        "analysis": [
            {
                "name": "error-rate",
                "verdict": "Fail",
                "time": _at(30),
                "value": 0.08,
                "failures": 1,
                "history": [
                    {"time": _at(28), "value": 0.0, "verdict": "Pass"},
                    {"time": _at(30), "value": 0.08, "verdict": "Fail"},
                ],
            },
        ],  # fmt: skip
    }
    return body


EVENTS = (
    EventRow(T0.timestamp() + 1, "Normal", "RolloutStarted", "candidate chat-v2 is Available; step 0: candidate weight 20%"),
    EventRow(T0.timestamp() + 20, "Normal", "WeightSet", "step 0 completed; step 1: candidate weight 60%"),
    EventRow(T0.timestamp() + 30, "Warning", "RolledBack", "MetricBreach: metric error-rate: 0.08 is above the maximum 0.01"),
)  # fmt: skip


def test_the_page_shows_the_weights_the_steps_and_the_breach(tmp_path: Path) -> None:
    body = _rolled_back()
    # The page shows status as stored; the models (which do not know traceIds yet) read the rest.
    known = {**body["status"], "rollbackReason": {**body["status"]["rollbackReason"], "traceIds": None}}
    del known["rollbackReason"]["traceIds"]
    spec, status = parse_spec(body["spec"]), parse_status(known)
    plan = analysis_plan(spec, "ml")
    seconds = range(0, 41)
    error_rate = tuple((T0.timestamp() + s, 0.08 if s >= 25 else 0.0) for s in seconds)
    ranges = {plan.metrics["error-rate"].candidate: RecordedSeries(error_rate)}  # the others: no history
    span = (T0, T0 + timedelta(seconds=40))
    timeline = report_timeline(body, spec, status, EVENTS, plan, ranges, span, "http://prometheus:9090")
    page_file = tmp_path / "chat.html"
    page_file.write_text(render_page(timeline))

    page = read_page(page_file)
    weights = page.chart("weights").path_values("weight")
    assert [w for i, w in enumerate(weights) if i == 0 or w != weights[i - 1]] == [0, 20, 60, 0]
    assert len(page.chart("weights").with_class("step")) == 2
    assert len(page.chart("weights").with_class("rollback")) == 1
    breached = page.chart("metric error-rate")
    threshold = float(breached.with_class("threshold")[0]["data-value"])
    assert threshold == 0.01
    values = breached.path_values("candidate")
    assert min(values) <= threshold < max(values) and max(values) > 0.07
    assert "0.08 is above the maximum 0.01" in page.text
    assert "4bf92f3577b34da6" in page.text  # a status field the page was not written for
    assert "p99-latency" in page.text and "refusal-rate" in page.text
