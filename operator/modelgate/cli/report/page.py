"""A Timeline as one self-contained HTML page, its charts drawn by Vega in the browser.

A Timeline as one self-contained HTML page: inline CSS, and Vega's JavaScript inline with each
chart's Vega-Lite spec (charts.py), drawn as interactive SVG views in the browser. Nothing
comes from anywhere else, so that the file can be mailed, attached to an incident or opened offline."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any

from modelgate.cli.render.promql import promql_html
from modelgate.cli.report.charts import chart_specs
from modelgate.cli.report.timeline import MetricTrace, Timeline
from modelgate.cli.report.units import suffix
from modelgate.cli.report.vega import page_script
from modelgate.core.reasons import moment

_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:16px 24px;color:#222;max-width:1000px}
.legend{margin:0 0 2px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:16px;margin:14px 0 2px}
.outcome{font-size:17px;font-weight:600;margin:0 0 8px}h2.breached{color:#c62828}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f4f4f4}.summary td:first-child{font-weight:600}
.Warning{color:#c62828}.rollback{background:#fdecea;border:1px solid #c62828;padding:8px 12px}
code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap;overflow-wrap:normal;word-break:normal}
.chart{min-height:200px}.legend{font-size:12px;color:#555}
"""


def render_page(timeline: Timeline) -> str:
    """The story first (the outcome, the weights, the breach), the rest of the evidence below it.
    Raises MissingRenderer without vl-convert (whose bundle the page carries)."""
    script = page_script()
    specs = dict(chart_specs(timeline))
    breached = [m for m in timeline.metrics if m.name == timeline.breached]
    others = [m for m in timeline.metrics if m.name != timeline.breached]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(timeline.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(timeline.title)}</h1>",
        f'<p class="outcome">{escape(timeline.outcome)}</p>',
        "<h2>Candidate weight</h2>",
        _chart("weights", specs["weights"]),
        f'<p class="legend">% of the traffic to the candidate, from {escape(timeline.weight_source)}; '
        "times in UTC</p>",
        *(_metric_section(timeline, m, specs.get(f"metric {m.name}")) for m in (*breached, *others)),
        "<h2>Rollout</h2>",
        _summary(timeline.summary),
        _earlier(timeline.earlier),
        *(_detail(heading, value) for heading, value in timeline.details if value),
        _events(timeline),
        f"<script>{script}</script>",
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
        return f"<code>{promql_html(value)}</code>"  # a query: broken between tokens only
    return escape(value if isinstance(value, str) else json.dumps(value))


def _name(field: object) -> str:
    """A status field's name in words: currentStepIndex -> Current step index."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", str(field)).lower()
    return escape(words[:1].upper() + words[1:])


def _chart(name: str, spec: dict[str, Any]) -> str:
    """A place for one Vega-Lite view; the page's script draws it there."""
    return f'<div class="chart" data-chart="{escape(name)}" data-spec="{escape(json.dumps(spec))}"></div>'


def _metric_section(timeline: Timeline, metric: MetricTrace, spec: dict[str, Any] | None) -> str:
    unit = f" ({suffix(metric.unit)})" if suffix(metric.unit) else ""
    breached = " breached" if metric.name == timeline.breached else ""
    heading = (
        f'<h2 class="metric{breached}" data-metric="{escape(metric.name)}">{escape(metric.name)}{unit}</h2>'
    )
    rule = f'<p class="legend">threshold: {escape(metric.rule or "-")}; dots: the evaluations status kept</p>'
    query = f"<p><code>{promql_html(metric.query)}</code></p>"
    if metric.error is not None or spec is None:
        return f'{heading}{rule}<p class="Warning">no history: {escape(metric.error or "")}</p>{query}'
    empty = "" if metric.candidate else '<p class="Warning">the query returned nothing over this span</p>'
    return heading + rule + empty + _chart(f"metric {metric.name}", spec) + query


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
