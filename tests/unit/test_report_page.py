"""`modelgate report`'s page, from a rolled-back rollout's spec, status, Events and ranges, rendered by
headless Chromium and read back: the weight line reaches the weights the route had, the breaching
metric's line crosses its threshold, and the steps, the rollback and its reason are on the page."""

from __future__ import annotations

import struct
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from modelgate.api import parse_spec, parse_status
from modelgate.cli.report.charts import HEIGHT, WIDTH
from modelgate.cli.report.page import render_page
from modelgate.cli.report.report import report_timeline, rollout_span
from modelgate.cli.report.timeline import EventRow, Timeline
from modelgate.cli.report.vega import PNG_SCALE, write_png
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.recorded import RecordedSeries
from testbed.manifests import SEED_METRICS, model_rollout
from tests.support.page import SCREEN, STORY, read_page

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
        "message": "metric error-rate: 0.08 is above the maximum 0.01; 1 breach, failureLimit 0",
        "traceIds": [{"traceId": "4bf92f3577b34da6", "pod": "chat-v2-abc-1"}],  # a field status may grow
    }
    body["status"] = {
        "phase": "RolledBack",
        "message": "rolled back: metric error-rate: 0.08 is above the maximum 0.01",
        "currentStepIndex": 1,
        "currentWeight": 0,
        "rolloutStartedAt": _at(0),
        "stepStarts": [1, 20],
        "weightChanges": [
            {"weight": 20, "seconds": 1},
            {"weight": 60, "seconds": 20},
            {"weight": 0, "seconds": 30},
        ],
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


def _timeline(
    events: tuple[EventRow, ...],
    status: dict[str, Any] | None = None,
) -> Timeline:
    body = _rolled_back()
    body["status"].update(status or {})
    # The page shows status as stored; the models (which do not know traceIds yet) read the rest.
    known = {**body["status"], "rollbackReason": {**body["status"]["rollbackReason"], "traceIds": None}}
    del known["rollbackReason"]["traceIds"]
    spec, status = parse_spec(body["spec"]), parse_status(known)
    plan = analysis_plan(spec, "ml")
    error_rate = plan.metrics["error-rate"]
    compared = plan.metrics["p99-vs-incumbent"]
    assert compared.incumbent is not None and error_rate.incumbent_drawn is not None
    ranges = {
        error_rate.candidate: _flat(0.0, until=25, then=0.08),
        error_rate.incumbent_drawn: _flat(0.001),  # a fixed threshold's chart shows the incumbent too
        plan.metrics["refusal-rate"].candidate: _flat(0.0),  # flat 0: the axis must not go below
        compared.candidate: _flat(0.25),
        compared.incumbent: _flat(0.2),
    }
    span = rollout_span(body, status, events, T0 + timedelta(minutes=5))
    return report_timeline(body, spec, status, events, plan, ranges, span, "http://prometheus:9090")


def _flat(value: float, until: float = 41, then: float = 0.0) -> RecordedSeries:
    return RecordedSeries(tuple((T + s, value if s < until else then) for s in range(41)))


def _page_file(tmp_path: Path, *args: Any) -> Path:
    page_file = tmp_path / "chat.html"
    page_file.write_text(render_page(_timeline(*args)))
    return page_file


LATER = ('[data-chart="metric p99-vs-incumbent"] svg', "table.summary")


def _changes(values: list[float]) -> list[float]:
    return [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]


def test_the_page_shows_the_weights_the_steps_and_the_breach_first(tmp_path: Path) -> None:
    page = read_page(_page_file(tmp_path, EVENTS), [*STORY, *LATER])
    assert page.charts_rendered == len(page.charts) == 5, page.charts  # the weights and 4 metrics
    weights = page.chart("weights")
    assert _changes(weights.values("weight")) == [0, 20, 60, 0]
    assert weights.rule_times("steps") == pytest.approx([T + 1, T + 20], abs=0.1)
    assert weights.rule_times("rollbacks") == pytest.approx([T + 30], abs=0.1)
    breached = page.chart("metric error-rate")
    assert breached.rule_values("bound") == pytest.approx([0.01], rel=1e-3)
    values = breached.values("candidate")
    assert min(values) <= 0.01 < max(values) and max(values) == pytest.approx(0.08)
    assert "0.08 is above the maximum 0.01" in page.text
    assert "4bf92f3577b34da6" in page.text  # a status field the page was not written for
    assert "p99-latency" in page.text and "refusal-rate" in page.text
    # A comparison's limit moves with the incumbent: 1.5 x 0.2.
    compared = page.chart("metric p99-vs-incumbent")
    limits = compared.values("limit_0")
    assert limits and all(v == pytest.approx(0.3, rel=1e-3) for v in limits)
    assert compared.values("incumbent") == pytest.approx([0.2] * 41, rel=1e-3)
    # A fixed threshold's chart draws the incumbent too, and a rate's axis starts at 0.
    assert breached.values("incumbent") == pytest.approx([0.001] * 41, rel=1e-3)
    assert breached.scales["y"]["domain"][0] == 0
    # The first screen (1400x1000) tells the outcome, the weights and the breach, then the rest.
    outcome = page.text.split("Candidate weight")[0]
    for said in ("Rolled back", "chat-v2", "error-rate", "8%", "1%", "0.1%", "UTC"):
        assert said in outcome, outcome
    boxes = page.boxes
    assert all(boxes[s].bottom <= SCREEN[1] for s in STORY), boxes
    tops = [boxes[s].top for s in [*STORY, *LATER]]
    assert tops == sorted(tops), boxes  # the story, then the other metrics, then the status


def test_the_weights_and_steps_are_the_status_record_not_the_events(tmp_path: Path) -> None:
    """Events expire after an hour (and their texts are for people); the status keeps the record."""
    timeline = _timeline(())
    assert _changes([w for _, w in timeline.weights]) == [0, 20, 60, 0]
    assert [(m.kind, m.time) for m in timeline.marks] == [
        ("step", T + 1),
        ("step", T + 20),
        ("rollback", T + 30),
    ]


def test_an_earlier_rollout_of_the_object_is_listed_not_drawn(tmp_path: Path) -> None:
    """The object ran chat-v1 -> chat-v0 to 100% before; this report is of chat-v2's rollout only."""
    earlier = (
        EventRow(T - 300, "Normal", "RolloutStarted", "chat-v0 is Available; step 0: candidate weight 20%"),
        EventRow(T - 280, "Normal", "WeightSet", "step 0 completed; step 1: candidate weight 60%"),
        EventRow(T - 260, "Normal", "RolloutSucceeded", "promoted"),
    )
    started = {"candidate": "chat-v0", "startedAt": _at(-301), "phase": "Succeeded"}
    status = {"rolloutStartedAt": _at(0), "earlierRollouts": [started]}
    page = read_page(_page_file(tmp_path, (*earlier, *EVENTS), status))
    weights = page.chart("weights")
    assert _changes(weights.values("weight")) == [0, 20, 60, 0]
    assert min(t for t, _ in weights.series("weight")) == pytest.approx(T, abs=0.01)
    assert len(weights.rule_times("steps")) == 2  # chat-v2's two steps, none of chat-v0's
    assert "Earlier rollouts" in page.text and "chat-v0" in page.text


def test_the_png_is_the_charts_at_twice_their_size(tmp_path: Path) -> None:
    timeline = _timeline(EVENTS)
    write_png(timeline, tmp_path / "chat.png")
    width, height = _png_size((tmp_path / "chat.png").read_bytes())
    charts = 1 + sum(m.error is None for m in timeline.metrics)
    assert PNG_SCALE * WIDTH <= width <= PNG_SCALE * (WIDTH + 250), width
    assert PNG_SCALE * HEIGHT * charts <= height <= PNG_SCALE * (HEIGHT + 150) * charts, height


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height
