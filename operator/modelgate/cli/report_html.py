"""A Timeline as one self-contained HTML page: inline CSS and SVG drawn here, no script, font or
image from anywhere else, so that the file can be mailed, attached to an incident or opened offline.

Every chart shares the time axis; its y axis carries `data-value` on each tick so that what is drawn
can be read back as numbers (the tests do)."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from modelgate.cli.report_units import NON_NEGATIVE, nice_ticks, shown, suffix
from modelgate.cli.timeline import Mark, MetricTrace, Points, Timeline
from modelgate.core.moments import moment

_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")

WIDTH, HEIGHT = 960, 190
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 14, 28
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
VERDICT_COLOUR = {"Pass": "#2e7d32", "Fail": "#c62828", "Inconclusive": "#f9a825", "Error": "#8e24aa"}

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;max-width:1000px}
.legend{margin:0 0 2px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:16px;margin:14px 0 2px}
.outcome{font-size:17px;font-weight:600;margin:0 0 8px}h2.breached{color:#c62828}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f4f4f4}.summary td:first-child{font-weight:600}
.Warning{color:#c62828}.rollback{background:#fdecea;border:1px solid #c62828;padding:8px 12px}
code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
svg{display:block;margin:4px 0}svg text{font:11px sans-serif;fill:#444}
.axis line{stroke:#bbb}.grid line{stroke:#eee}
.weight{fill:none;stroke:#1565c0;stroke-width:2}.candidate{fill:none;stroke:#1565c0;stroke-width:1.5}
.incumbent{fill:none;stroke:#777;stroke-width:1.5;stroke-dasharray:5 3}
.threshold line,path.threshold{stroke:#c62828;stroke-dasharray:6 3;fill:none}
.mark.step line{stroke:#999;stroke-dasharray:2 3}
.mark.rollback line{stroke:#c62828;stroke-width:2}.legend{font-size:12px;color:#555}
"""


def render_page(timeline: Timeline) -> str:
    """The story first (the outcome, the weights, the breach), the rest of the evidence below it."""
    breached = [m for m in timeline.metrics if m.name == timeline.breached]
    others = [m for m in timeline.metrics if m.name != timeline.breached]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(timeline.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(timeline.title)}</h1>",
        f'<p class="outcome">{escape(timeline.outcome)}</p>',
        "<h2>Candidate weight</h2>",
        _weight_chart(timeline),
        f'<p class="legend">% of the traffic to the candidate, from {escape(timeline.weight_source)}; '
        "times in UTC</p>",
        *(_metric_section(timeline, metric) for metric in (*breached, *others)),
        "<h2>Rollout</h2>",
        _summary(timeline.summary),
        _earlier(timeline.earlier),
        *(_detail(heading, value) for heading, value in timeline.details if value),
        _events(timeline),
        "</body></html>",
    ]
    return "\n".join(parts)


def _summary(rows: Sequence[tuple[str, str]]) -> str:
    cells = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in rows)
    return f'<table class="summary">{cells}</table>'


def _earlier(rows: Sequence[tuple[str, str, str]]) -> str:
    if not rows:
        return ""
    head = "".join(f"<th>{c}</th>" for c in ("Candidate", "Started", "Outcome"))
    cells = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    note = '<p class="legend">this object\'s rollouts before this one: not drawn above</p>'
    return f'<h2>Earlier rollouts</h2>{note}<table class="earlier"><tr>{head}</tr>{cells}</table>'


def _detail(heading: str, value: Any) -> str:
    css = ' class="rollback"' if heading.lower().startswith("rollback") else ""
    return f'<h2>{escape(heading)}</h2><div{css} data-field="{escape(heading)}">{_value(value)}</div>'


def _value(value: Any) -> str:
    """Any JSON value from status as HTML: objects as tables of their fields, lists of objects as
    tables with a column per field, so fields added to status later show without changes here."""
    if isinstance(value, dict):
        rows = "".join(f"<tr><th>{_name(k)}</th><td>{_value(v)}</td></tr>" for k, v in value.items())
        return f"<table>{rows}</table>"
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        columns = list(dict.fromkeys(key for item in value for key in item))
        head = "".join(f"<th>{_name(c)}</th>" for c in columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{_value(item.get(c, ''))}</td>" for c in columns) + "</tr>"
            for item in value
        )
        return f"<table><tr>{head}</tr>{body}</table>"
    if isinstance(value, list):
        return ", ".join(_value(item) for item in value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, str) and _TIMESTAMP.match(value):
        return escape(moment(datetime.fromisoformat(value)))
    if isinstance(value, str) and ("{" in value or "(" in value) and len(value) > 40:
        return f"<code>{escape(value)}</code>"  # a query
    return escape(value if isinstance(value, str) else json.dumps(value))


def _name(field: object) -> str:
    """A status field's name in words: currentStepIndex -> Current step index."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(field)).lower()
    return escape(words[:1].upper() + words[1:])


class _Axes:
    """Maps time and value to the chart's pixels."""

    def __init__(self, start: float, end: float, low: float, high: float) -> None:
        self.start, self.end = start, max(end, start + 1)
        self.low, self.high = low, high if high > low else low + 1

    def x(self, time: float) -> float:
        return LEFT + (time - self.start) / (self.end - self.start) * PLOT_W

    def y(self, value: float) -> float:
        clipped = min(max(value, self.low), self.high)  # +Inf drawn at the top, -Inf at the bottom
        return TOP + (1 - (clipped - self.low) / (self.high - self.low)) * PLOT_H


def _chart(
    axes: _Axes, body: Iterable[str], ticks: Sequence[float], label: Callable[[float], str], css: str
) -> str:
    grid = "".join(
        f'<g class="y-tick" data-value="{tick:g}"><line x1="{LEFT}" x2="{WIDTH - RIGHT}" '
        f'y1="{axes.y(tick):.2f}" y2="{axes.y(tick):.2f}"/>'
        f'<text x="{LEFT - 6}" y="{axes.y(tick) + 4:.2f}" text-anchor="end">{escape(label(tick))}</text></g>'
        for tick in ticks
    )
    times = [axes.start + (axes.end - axes.start) * i / 5 for i in range(6)]
    anchors = ["start", *["middle"] * 4, "end"]
    zones = ["", "", "", "", "", " UTC"]
    labels = "".join(
        f'<text x="{axes.x(t):.2f}" y="{HEIGHT - 8}" text-anchor="{anchor}">{_clock(t)}{zone}</text>'
        for t, anchor, zone in zip(times, anchors, zones, strict=True)
    )
    frame = (
        f'<g class="axis"><line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + PLOT_H}"/>'
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + PLOT_H}" y2="{TOP + PLOT_H}"/></g>'
    )
    return (
        f'<svg class="{css}" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}"><g class="grid">{grid}</g>{frame}{"".join(body)}{labels}'
        "</svg>"
    )


def _marks(axes: _Axes, marks: Sequence[Mark], *, labelled: bool) -> list[str]:
    drawn = []
    for index, mark in enumerate(marks):
        x = axes.x(mark.time)
        y = TOP + 10 + (index % 3) * 13  # staggered: steps close together would overwrite each other
        label = f'<text x="{x + 3:.2f}" y="{y}">{escape(mark.label)}</text>' if labelled else ""
        drawn.append(
            f'<g class="mark {mark.kind}" data-time="{mark.time:.3f}"><title>{escape(mark.label)} at '
            f"{_clock(mark.time)} UTC</title>"
            f'<line x1="{x:.2f}" x2="{x:.2f}" y1="{TOP}" y2="{TOP + PLOT_H}"/>{label}</g>'
        )
    return drawn


def _weight_chart(timeline: Timeline) -> str:
    axes = _Axes(timeline.start, timeline.end, 0, 100)
    path = []
    for index, (time, weight) in enumerate(timeline.weights):
        x, y = axes.x(time), axes.y(weight)
        path.append(f"M{x:.2f},{y:.2f}" if index == 0 else f"H{x:.2f}V{y:.2f}")
    if timeline.weights:
        path.append(f"H{axes.x(timeline.end):.2f}")
    body = [f'<path class="weight" d="{"".join(path)}"/>', *_marks(axes, timeline.marks, labelled=True)]
    return _chart(axes, body, (0, 25, 50, 75, 100), lambda v: f"{v:g}%", "weights")


def _metric_section(timeline: Timeline, metric: MetricTrace) -> str:
    unit = f" ({suffix(metric.unit)})" if suffix(metric.unit) else ""
    breached = " breached" if metric.name == timeline.breached else ""
    heading = (
        f'<h2 class="metric{breached}" data-metric="{escape(metric.name)}">{escape(metric.name)}{unit}</h2>'
    )
    rule = f'<p class="legend">threshold: {escape(metric.rule or "-")}; candidate solid'
    rule += ", incumbent dashed" if metric.incumbent else ""
    rule += "; dots: the evaluations status kept</p>"
    query = f"<p><code>{escape(metric.query)}</code></p>"
    if metric.error is not None:
        return f'{heading}{rule}<p class="Warning">no history: {escape(metric.error)}</p>{query}'
    values = [v for _, v in (*metric.candidate, *metric.incumbent) if math.isfinite(v)]
    values += [v for _, v in metric.bounds]
    values += [v for _, points in metric.relative for _, v in points if math.isfinite(v)]
    values += [v for _, v, _ in metric.verdicts if v is not None]
    floor = 0.0 if metric.unit in NON_NEGATIVE or not values else min(values)
    ticks = nice_ticks(min([0.0, floor]), max(values, default=1.0) * 1.1 or 1.0)
    axes = _Axes(timeline.start, timeline.end, ticks[0], ticks[-1])
    body = [
        _line(axes, metric.incumbent, "incumbent", "incumbent"),
        _line(axes, metric.candidate, "candidate", "candidate"),
        *(_line(axes, points, "threshold relative", label) for label, points in metric.relative),
        *(
            f'<g class="threshold" data-bound="{kind}" data-value="{value:g}">'
            f"<title>{kind} {shown(value, metric.unit)}</title>"
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{axes.y(value):.2f}" y2="{axes.y(value):.2f}"/></g>'
            for kind, value in metric.bounds
        ),
        *(
            f'<circle class="verdict {verdict}" cx="{axes.x(t):.2f}" cy="{axes.y(v):.2f}" r="3.5" '
            f'fill="{VERDICT_COLOUR.get(verdict, "#444")}">'
            f"<title>{verdict} {shown(v, metric.unit)} at {_clock(t)} UTC</title></circle>"
            for t, v, verdict in metric.verdicts
            if v is not None
        ),
        *_marks(axes, timeline.marks, labelled=False),
    ]
    empty = "" if metric.candidate else '<p class="Warning">the query returned nothing over this span</p>'
    chart = _chart(axes, body, ticks, lambda v: shown(v, metric.unit), f"metric {metric.name}")
    return heading + rule + empty + chart + query


def _line(axes: _Axes, points: Points, css: str, label: str = "") -> str:
    """A polyline through the points, broken where a value is NaN or a sample is missing."""
    if not points:
        return ""
    gap = _usual_step(points) * 2.5
    parts, previous = [], None
    for time, value in points:
        if math.isnan(value):
            previous = None
            continue
        move = "M" if previous is None or time - previous > gap else "L"
        parts.append(f"{move}{axes.x(time):.2f},{axes.y(value):.2f}")
        previous = time
    title = f"<title>{escape(label)}</title>" if label else ""
    return f'<path class="{css}" d="{"".join(parts)}">{title}</path>'


def _usual_step(points: Points) -> float:
    steps = sorted(b[0] - a[0] for a, b in itertools.pairwise(points))
    return steps[len(steps) // 2] if steps else 1.0


def _events(timeline: Timeline) -> str:
    if not timeline.events:
        return ""
    rows = "".join(
        f'<tr class="{escape(e.type)}"><td>{_clock(e.time)}</td><td>{escape(e.type)}</td>'
        f"<td>{escape(e.reason)}</td><td>{escape(e.message)}</td></tr>"
        for e in timeline.events
    )
    head = "".join(f"<th>{column}</th>" for column in ("Time (UTC)", "Type", "Reason", "Message"))
    return f'<h2>Events</h2><table class="events"><tr>{head}</tr>{rows}</table>'


def _clock(time: float) -> str:
    return datetime.fromtimestamp(time, UTC).strftime("%H:%M:%S")
