"""A Timeline's charts as Vega-Lite specs (plain dicts).

A Timeline's charts as Vega-Lite specs (plain dicts): one description per chart, drawn as an
interactive view on the report's page and as the PNG, both by Vega's own renderer.

Values stay in the metric's own unit (a ratio as 0.01); axes and tooltips show them in the report's
(1%). Times are Vega timestamps (ms) on UTC scales, so that every viewer reads the same clock."""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from modelgate.cli.report.timeline import Mark, MetricTrace, Points, Timeline
from modelgate.cli.report.units import NON_NEGATIVE, shown, suffix

VEGA_LITE = "v6.4"  # the version specs are written for; the page's bundle and the PNG use it
SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"
WIDTH, HEIGHT = 860, 150  # the plot area of one chart, in CSS pixels
BLUE, GREY, RED = "#1565c0", "#777", "#c62828"
VERDICT_COLOUR = {"Pass": "#2e7d32", "Fail": RED, "Inconclusive": "#f9a825", "Error": "#8e24aa"}
# d3 formats of a value in the report's unit, by the preset's unit (a ratio's "%" scales it).
_FORMAT = {"ratio": ".3~%"}
TIME_TITLE = "time (UTC)"


def chart_specs(timeline: Timeline) -> list[tuple[str, dict[str, Any]]]:
    """The page's charts in order, each with its name: the weights, then each metric."""
    return [
        ("weights", weight_chart(timeline)),
        *((f"metric {m.name}", metric_chart(timeline, m)) for m in timeline.metrics if m.error is None),
    ]


def png_chart(timeline: Timeline) -> dict[str, Any]:
    """Every chart of the page, one under the other, under a title that says the outcome."""
    charts = [{**_member("weights", weight_chart(timeline)), "title": "candidate weight (% of the traffic)"}]
    charts += [
        {**_member(f"metric{index}", metric_chart(timeline, m)), "title": metric_title(m)}
        for index, m in enumerate(m for m in timeline.metrics if m.error is None)
    ]
    outcome = textwrap.wrap(timeline.outcome, 120, break_on_hyphens=False) or [""]
    return {
        "$schema": SCHEMA,
        "title": {"text": timeline.title, "subtitle": outcome, "anchor": "start", "fontSize": 15},
        "vconcat": charts,
        "resolve": {"scale": {"color": "independent", "strokeDash": "independent"}},
        "config": _CONFIG,
        "background": "white",
    }


def metric_title(metric: MetricTrace) -> str:
    unit = suffix(metric.unit)
    return f"{metric.name}{f' ({unit})' if unit else ''}: {metric.rule or 'no threshold'}"


def weight_chart(timeline: Timeline) -> dict[str, Any]:
    extended = (*timeline.weights, (timeline.end, timeline.weights[-1][1])) if timeline.weights else ()
    weights = [{**_moment(t), "weight": w, "shown": f"{w:g}%"} for t, w in extended]
    y = {
        "field": "weight",
        "type": "quantitative",
        "title": "candidate weight (%)",
        "scale": {"domain": [0, 100]},
        "axis": {"values": [0, 25, 50, 75, 100], "labelExpr": "datum.value + '%'"},
    }
    tooltip = [_time_tooltip(), {"field": "shown", "title": "candidate weight"}]
    layers = [
        _layer("weight", weights, {"type": "line", "interpolate": "step-after", "color": BLUE}, {"y": y}),
        _layer(
            "weight_points",
            weights[:-1],
            {"type": "point", "filled": True, "color": BLUE},
            {"y": y, "tooltip": tooltip},
        ),
        *_mark_layers(timeline.marks, labelled=True),
    ]
    return _chart(timeline, layers)


def metric_chart(timeline: Timeline, metric: MetricTrace) -> dict[str, Any]:
    """The candidate's series, the incumbent's, the fixed bounds as labelled rules, the limits that
    move with the incumbent, the evaluations status kept, and the step and rollback lines."""
    y = _value_axis(metric)
    legend: list[tuple[str, str, list[int]]] = []  # series name, colour, dash

    def series(name: str, label: str, points: Points, colour: str, dash: list[int]) -> dict[str, Any]:
        legend.append((label, colour, dash))
        rows = [
            {**_moment(t), "value": v, "series": label, "shown": shown(v, metric.unit)} for t, v in points
        ]
        return _layer(
            name,
            _broken(rows),
            {"type": "line", "invalid": "break-paths-show-domains"},
            {
                "y": y,
                "color": {"datum": label},
                "strokeDash": {"datum": label},
            },
        )

    layers = []
    if metric.incumbent:
        layers.append(series("incumbent", "incumbent", metric.incumbent, GREY, [5, 3]))
    layers.append(series("candidate", timeline.candidate_label, metric.candidate, BLUE, []))
    for index, (label, points) in enumerate(metric.relative):
        layers.append(series(f"limit_{index}", f"limit: {label}", points, RED, [6, 3]))
    layers += [
        *_bound_layers(metric, y),
        *_verdict_layer(metric, y),
        *_mark_layers(timeline.marks, labelled=False),
    ]
    spec = _chart(timeline, layers)
    spec["layer"][0]["encoding"]["color"]["scale"] = {
        "domain": [label for label, _, _ in legend],
        "range": [colour for _, colour, _ in legend],
    }
    spec["layer"][0]["encoding"]["color"]["legend"] = {
        "title": None,
        "orient": "top-left",
        "direction": "horizontal",
    }
    spec["layer"][0]["encoding"]["strokeDash"]["scale"] = {
        "domain": [label for label, _, _ in legend],
        "range": [dash for _, _, dash in legend],
    }
    return spec


def _value_axis(metric: MetricTrace) -> dict[str, Any]:
    unit = suffix(metric.unit)
    scale: dict[str, Any] = {"nice": True, "zero": metric.unit in NON_NEGATIVE}
    if metric.unit in NON_NEGATIVE:
        scale["domainMin"] = 0  # a share, a rate or a latency is never below 0: nor is its axis
    return {
        "field": "value",
        "type": "quantitative",
        "title": f"{metric.name} ({unit})" if unit else metric.name,
        "scale": scale,
        "axis": {"tickCount": 5, "labelExpr": label_expression(metric.unit)},
    }


def label_expression(unit: str) -> str:
    """A Vega expression writing `datum.value` in the report's unit: 0.01 -> "1%", 2.5 -> "2.5 s"."""
    if unit in _FORMAT:
        return f"format(datum.value, '{_FORMAT[unit]}')"
    end = suffix(unit)
    return f"format(datum.value, '.3~g') + ' {end}'" if end else "format(datum.value, '.3~g')"


def _bound_layers(metric: MetricTrace, y: dict[str, Any]) -> list[dict[str, Any]]:
    if not metric.bounds:
        return []
    rows = [
        {"bound": kind, "value": v, "label": f"{kind} {shown(v, metric.unit)}"} for kind, v in metric.bounds
    ]
    tooltip = [{"field": "label", "title": "threshold"}]
    rule = {"type": "rule", "color": RED, "strokeDash": [6, 3], "strokeWidth": 1.5}
    text = {
        "type": "text",
        "color": RED,
        "align": "right",
        "baseline": "bottom",
        "dx": -2,
        "dy": -2,
        "fontWeight": "bold",
    }
    return [
        _layer("bound", rows, rule, {"y": y, "tooltip": tooltip}, timed=False),
        _layer(
            "bound_label",
            rows,
            text,
            {"y": y, "x": {"value": "width"}, "text": {"field": "label"}},
            timed=False,
        ),
    ]


def _verdict_layer(metric: MetricTrace, y: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [
        {**_moment(t), "value": v, "verdict": verdict, "shown": shown(v, metric.unit)}
        for t, v, verdict in metric.verdicts
        if v is not None and math.isfinite(v)
    ]
    if not rows:
        return []
    colour = {
        "field": "verdict",
        "scale": {"domain": list(VERDICT_COLOUR), "range": list(VERDICT_COLOUR.values())},
        "legend": None,
    }
    tooltip = [_time_tooltip(), {"field": "verdict"}, {"field": "shown", "title": metric.name}]
    return [
        _layer(
            "verdicts",
            rows,
            {"type": "point", "filled": True, "size": 45},
            {"y": y, "fill": colour, "tooltip": tooltip},
        )
    ]


def _mark_layers(marks: Sequence[Mark], *, labelled: bool) -> list[dict[str, Any]]:
    """The step starts (grey, dotted) and rollbacks (red) as vertical rules across the chart."""
    layers = []
    for kind, style in (
        ("step", {"color": "#999", "strokeDash": [2, 3]}),
        ("rollback", {"color": RED, "strokeWidth": 2}),
    ):
        rows = [{**_moment(m.time), "label": m.label} for m in marks if m.kind == kind]
        if not rows:
            continue
        tooltip = [_time_tooltip(), {"field": "label", "title": kind}]
        layers.append(_layer(f"{kind}s", rows, {"type": "rule", **style}, {"tooltip": tooltip}))
        if labelled:  # staggered: steps close together would overwrite each other
            for index, row in enumerate(rows):
                row["row"] = index % 3
            text = {
                "type": "text",
                "align": "left",
                "dx": 3,
                "fontSize": 10,
                "color": "#444",
                "y": {"expr": "10 + datum.row * 13"},
            }
            layers.append(_layer(f"{kind}_labels", rows, text, {"text": {"field": "label"}}))
    return layers


def _layer(
    name: str,
    rows: list[dict[str, Any]],
    mark: dict[str, Any],
    encoding: dict[str, Any],
    *,
    timed: bool = True,
) -> dict[str, Any]:
    """One layer; its mark is drawn as `<name>_marks` (the tests read the SVG back by that name)."""
    x = {"x": {"field": "time", "type": "temporal"}} if timed else {}
    return {"name": name, "data": {"values": rows}, "mark": mark, "encoding": {**x, **encoding}}


def _chart(timeline: Timeline, layers: list[dict[str, Any]]) -> dict[str, Any]:
    """The layers on the shared time axis: the timeline's span, in UTC."""
    time_scale = {"type": "utc", "domain": [_ms(timeline.start), _ms(timeline.end)]}
    axis = {"format": "%H:%M:%S", "title": TIME_TITLE, "tickCount": 8, "labelFlush": True}
    for layer in layers:
        if "x" in layer["encoding"] and layer["encoding"]["x"].get("type") == "temporal":
            layer["encoding"]["x"] |= {"scale": time_scale, "axis": axis}
    return {
        "$schema": SCHEMA,
        "width": WIDTH,
        "height": HEIGHT,
        "layer": layers,
        "resolve": {"scale": {"y": "shared"}},
        "config": _CONFIG,
    }


def _member(prefix: str, spec: dict[str, Any]) -> dict[str, Any]:
    """A chart as a member of a concatenation (which carries the schema and config), its layers'
    names prefixed: Vega-Lite looks a layer's data up by the layer's name, so charts that each had
    a layer `candidate` all drew the dataset compiled last under that name (the last metric's)."""
    layers = [{**layer, "name": f"{prefix}_{layer['name']}"} for layer in spec["layer"]]
    return {k: v for k, v in spec.items() if k not in ("$schema", "config")} | {"layer": layers}


_CONFIG = {"font": "system-ui, sans-serif", "axis": {"labelFontSize": 11, "titleFontSize": 11}}


def _time_tooltip() -> dict[str, Any]:
    return {"field": "at", "title": TIME_TITLE}


def _moment(time: float) -> dict[str, Any]:
    """A row's time: for the axis (ms) and for the tooltip (as the axis writes it)."""
    return {"time": _ms(time), "at": datetime.fromtimestamp(time, UTC).strftime("%H:%M:%S")}


def _broken(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with a null value where a sample is missing or not finite, so the line breaks there
    rather than joining values far apart."""
    steps = sorted(b["time"] - a["time"] for a, b in itertools.pairwise(rows))
    gap = (steps[len(steps) // 2] if steps else 1.0) * 2.5
    out: list[dict[str, Any]] = []
    for row in rows:
        if out and row["time"] - out[-1]["time"] > gap:
            out.append({"time": out[-1]["time"] + 1, "value": None, "series": row["series"]})
        out.append(row if math.isfinite(row["value"]) else {**row, "value": None, "shown": "no value"})
    return out


def _ms(time: float) -> float:
    return round(time * 1000, 3)
