"""`modelgate report`'s page, from a rolled-back rollout's spec, status, Events and ranges, rendered by
headless Chromium and read back: the weight line reaches the weights the route had, the breaching
metric's line crosses its threshold, and the steps, the rollback and its reason are on the page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from modelgate.api import parse_spec, parse_status
from modelgate.cli.report import operator_queries, report_timeline, rollout_span
from modelgate.cli.report_html import render_page
from modelgate.cli.report_png import draw, write_png
from modelgate.cli.timeline import EventRow
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.recorded import RecordedSeries
from testbed.manifests import SEED_METRICS, model_rollout
from tests.support.page import RenderedPage, element_boxes, read_page

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
COMPARED = {"name": "p99-vs-incumbent", "preset": "latencyP99", "compare": {"maxRatio": 1.5}}


def _at(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


def _rolled_back() -> dict[str, Any]:
    body = model_rollout(
        "chat",
        "ml",
        steps=[{"setWeight": 20}, {"setWeight": 60}, {"pause": {}}],
        prometheus="http://prometheus:9090",
        metrics=[*SEED_METRICS, COMPARED],
        interval="2s",
    )
    body["metadata"]["creationTimestamp"] = _at(0)
    reason = {
        "time": _at(30),
        "metric": "error-rate",
        "value": 0.08,
        "threshold": 0.01,
        "query": "sum(rate(x[1m]))",
        "message": "metric error-rate: 0.08 is above the maximum 0.01; 1 breach(es), failureLimit 0",
        "traceIds": [{"traceId": "4bf92f3577b34da6", "pod": "chat-v2-abc-1"}],  # a field status may grow
    }
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
                "incumbentValue": 0.001,
                "history": [
                    {"time": _at(28), "value": 0.0, "verdict": "Pass"},
                    {"time": _at(30), "value": 0.08, "verdict": "Fail"},
                ],
            },
        ],
    }
    return body


T = T0.timestamp()
EVENTS = (
    EventRow(T + 1, "Normal", "RolloutStarted", "chat-v2 is Available; step 0: candidate weight 20%"),
    EventRow(T + 20, "Normal", "WeightSet", "step 0 completed; step 1: candidate weight 60%"),
    EventRow(T + 30, "Warning", "RolledBack", "MetricBreach: error-rate: 0.08 is above the maximum 0.01"),
)


def _page(
    tmp_path: Path,
    events: tuple[EventRow, ...],
    gauges: dict[str, RecordedSeries],
    status: dict[str, Any] | None = None,
) -> RenderedPage:
    return read_page(_page_file(tmp_path, events, gauges, status))


def _page_file(
    tmp_path: Path,
    events: tuple[EventRow, ...],
    gauges: dict[str, RecordedSeries],
    status: dict[str, Any] | None = None,
) -> Path:
    body = _rolled_back()
    body["status"].update(status or {})
    # The page shows status as stored; the models (which do not know traceIds yet) read the rest.
    known = {**body["status"], "rollbackReason": {**body["status"]["rollbackReason"], "traceIds": None}}
    del known["rollbackReason"]["traceIds"]
    spec, status = parse_spec(body["spec"]), parse_status(known)
    plan = analysis_plan(spec, "ml")
    error_rate = tuple((T0.timestamp() + s, 0.08 if s >= 25 else 0.0) for s in range(41))
    # The other metrics' ranges are missing: the page says so rather than failing.
    compared = plan.metrics["p99-vs-incumbent"]
    assert compared.incumbent is not None
    ranges = {
        plan.metrics["error-rate"].candidate: RecordedSeries(error_rate),
        compared.candidate: RecordedSeries(tuple((T0.timestamp() + s, 0.25) for s in range(41))),
        compared.incumbent: RecordedSeries(tuple((T0.timestamp() + s, 0.2) for s in range(41))),
        **gauges,
    }
    span = rollout_span(body, status, events, T0 + timedelta(minutes=5))
    timeline = report_timeline(body, spec, status, events, plan, ranges, span, "http://prometheus:9090")
    page_file = tmp_path / "chat.html"
    page_file.write_text(render_page(timeline))
    return page_file


def _changes(values: list[float]) -> list[float]:
    return [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


def test_the_page_shows_the_weights_the_steps_and_the_breach(tmp_path: Path) -> None:
    page = _page(tmp_path, EVENTS, {})
    assert _changes(page.chart("weights").path_values("weight")) == [0, 20, 60, 0]
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
    # A comparison's limit moves with the incumbent: 1.5 x 0.2.
    limits = page.chart("metric p99-vs-incumbent").path_values("threshold relative")
    assert limits and all(v == pytest.approx(0.3, rel=1e-3) for v in limits)


def test_without_events_the_weights_come_from_the_operators_metrics(tmp_path: Path) -> None:
    """Events expire after an hour; the operator's gauges, scraped by Prometheus, do not."""
    weight = [(T0.timestamp() + s, 20.0 if s < 20 else 60.0 if s < 30 else 0.0) for s in range(2, 41)]
    step = [(T0.timestamp() + s, 0.0 if s < 20 else 1.0) for s in range(2, 41)]
    queries = operator_queries("ml", "chat")
    gauges = {queries["weight"]: RecordedSeries(tuple(weight)), queries["step"]: RecordedSeries(tuple(step))}
    page = _page(tmp_path, (), gauges)
    assert _changes(page.chart("weights").path_values("weight")) == [20, 60, 0]
    assert len(page.chart("weights").with_class("step")) == 2
    assert "modelgate_rollout_candidate_weight" in page.text


def test_the_first_screen_tells_the_outcome_the_weights_and_the_breach(tmp_path: Path) -> None:
    page_file = _page_file(tmp_path, EVENTS, {})
    page = read_page(page_file)
    outcome = page.text.split("Candidate weight")[0]
    # The sentence names the phase, the candidate, the metric, its value, the bound and the incumbent.
    for said in ("Rolled back", "chat-v2", "error-rate", "8%", "1%", "0.1%", "UTC"):
        assert said in outcome, outcome
    first = ["p.outcome", "svg.weights", "h2.breached", 'svg[class="metric error-rate"]']
    later = ['svg[class="metric p99-vs-incumbent"]', "table.summary"]
    boxes = element_boxes(page_file, [*first, *later])
    assert all(boxes[s].bottom <= 1000 for s in first), boxes
    tops = [boxes[s].top for s in [*first, *later]]
    assert tops == sorted(tops), boxes  # the story, then the other metrics, then the status


def test_ticks_are_round_numbers_in_the_metrics_unit(tmp_path: Path) -> None:
    page = _page(tmp_path, EVENTS, {})
    ticks = sorted(page.chart("metric error-rate").ticks.values())
    assert ticks[0] == 0 and all(round(t / (ticks[1] - ticks[0]), 6).is_integer() for t in ticks), ticks
    assert all(len(f"{t:g}") <= 6 for t in ticks), ticks  # 0.02, not 0.0129
    assert "%" in page.text and " UTC" in page.text


def test_an_earlier_rollout_of_the_object_is_listed_not_drawn(tmp_path: Path) -> None:
    """The object ran chat-v1 -> chat-v0 to 100% before; this report is of chat-v2's rollout only."""
    earlier = (
        EventRow(T - 300, "Normal", "RolloutStarted", "chat-v0 is Available; step 0: candidate weight 20%"),
        EventRow(T - 280, "Normal", "WeightSet", "step 0 completed; step 1: candidate weight 60%"),
        EventRow(T - 260, "Normal", "RolloutSucceeded", "promoted"),
    )
    started = {"candidate": "chat-v0", "startedAt": _at(-301), "phase": "Succeeded"}
    status = {"rolloutStartedAt": _at(0), "earlierRollouts": [started]}
    page_file = _page_file(tmp_path, (*earlier, *EVENTS), {}, status)
    page = read_page(page_file)
    weights = page.chart("weights")
    assert 100 not in weights.path_values("weight")
    assert _changes(weights.path_values("weight")) == [0, 20, 60, 0]
    assert len(weights.with_class("step")) == 2  # chat-v2's two steps, none of chat-v0's
    assert "Earlier rollouts" in page.text and "chat-v0" in page.text


def test_the_png_says_the_outcome_and_keeps_rates_at_or_above_zero(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    body = _rolled_back()
    del body["status"]["rollbackReason"]["traceIds"]
    spec, status = parse_spec(body["spec"]), parse_status(body["status"])
    plan = analysis_plan(spec, "ml")
    refusals = plan.metrics["refusal-rate"].candidate
    ranges = {refusals: RecordedSeries(tuple((T + s, 0.0) for s in range(41)))}  # flat 0: no negative axis
    span = (T0, T0 + timedelta(seconds=40))
    timeline = report_timeline(body, spec, status, EVENTS, plan, ranges, span, None)
    figure = draw(timeline)
    try:
        assert timeline.outcome and timeline.outcome in figure.axes[0].get_title(loc="left")
        names = [m.name for m in timeline.metrics]
        refusal_axes = figure.axes[1 + names.index("refusal-rate")]
        assert refusal_axes.get_ylim()[0] >= 0
    finally:
        figure.clf()
    write_png(timeline, tmp_path / "chat.png")
    assert (tmp_path / "chat.png").stat().st_size > 0
