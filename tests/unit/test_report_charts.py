"""The report's Vega-Lite specs as data: what each chart is told to draw (the page and the PNG draw
the same specs), and what `modelgate report` says when the renderer is not installed."""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
import vl_convert

from modelgate.cli.report.charts import VEGA_LITE, chart_specs, png_chart
from modelgate.cli.report.timeline import Mark, MetricTrace, Timeline
from modelgate.cli.report.vega import INSTALL_HINT, MissingRenderer, check_renderer

T = 1_767_603_600.0  # 2026-01-05 09:00:00 UTC
FLAT_ZERO = tuple((T + s, 0.0) for s in range(40))


def _timeline(*metrics: MetricTrace, outcome: str = "Rolled back chat-v2: error-rate was 8%.") -> Timeline:
    return Timeline(
        "ModelRollout ml/chat",
        (),
        T,
        T + 40,
        ((T, 0.0), (T + 1, 20.0), (T + 30, 0.0)),
        "the rollout's Events",
        (Mark(T + 1, "step 0: setWeight 20", "step"), Mark(T + 30, "rollback: error-rate", "rollback")),
        metrics,
        outcome=outcome,
        breached="error-rate",
    )


ERROR_RATE = MetricTrace(
    "error-rate",
    "q",
    FLAT_ZERO,
    incumbent=tuple((T + s, 0.001) for s in range(40)),
    bounds=(("max", 0.01),),
    rule="<= 0.01",
    unit="ratio",
)


def _layer(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(layer for layer in spec["layer"] if layer["name"] == name)


def _values(layer: dict[str, Any], field: str) -> list[Any]:
    return [row[field] for row in layer["data"]["values"]]


def test_a_fixed_thresholds_chart_has_the_incumbent_the_bound_labelled_and_no_negative_axis() -> None:
    spec = dict(chart_specs(_timeline(ERROR_RATE)))["metric error-rate"]
    assert set(_values(_layer(spec, "incumbent"), "value")) == {0.001}
    assert set(_values(_layer(spec, "candidate"), "value")) == {0.0}
    bound = _layer(spec, "bound")
    assert _values(bound, "value") == [0.01]
    label = _values(_layer(spec, "bound_label"), "label")[0]
    assert "1%" in label and "0.01" not in label  # in the metric's unit, not the raw threshold
    y = _layer(spec, "candidate")["encoding"]["y"]
    assert y["scale"]["domainMin"] == 0 and y["scale"]["zero"] is True
    times = _layer(spec, "candidate")["encoding"]["x"]
    assert times["scale"]["type"] == "utc" and "UTC" in times["axis"]["title"]
    assert times["scale"]["domain"] == [T * 1000, (T + 40) * 1000]


def test_a_query_of_the_users_own_may_go_below_zero() -> None:
    own = MetricTrace("drift", "q", tuple((T + s, -1.0 + s / 20) for s in range(40)), unit="")
    spec = dict(chart_specs(_timeline(own)))["metric drift"]
    assert "domainMin" not in _layer(spec, "candidate")["encoding"]["y"]["scale"]


def test_the_weight_chart_marks_this_attempts_steps_and_its_rollback() -> None:
    spec = dict(chart_specs(_timeline(ERROR_RATE)))["weights"]
    assert _values(_layer(spec, "weight"), "weight") == [0.0, 20.0, 0.0, 0.0]  # held to the span's end
    assert _values(_layer(spec, "steps"), "time") == [(T + 1) * 1000]
    assert _values(_layer(spec, "rollbacks"), "time") == [(T + 30) * 1000]
    assert _layer(spec, "weight")["encoding"]["y"]["scale"]["domain"] == [0, 100]


def test_the_pngs_title_says_the_outcome() -> None:
    timeline = _timeline(ERROR_RATE, outcome="Rolled back chat-v2: " + "error-rate was 8% " * 10)
    title = png_chart(timeline)["title"]
    assert " ".join(title["subtitle"]).split() == timeline.outcome.split()
    assert len(png_chart(timeline)["vconcat"]) == 2


def test_ticks_are_round_numbers_in_the_metrics_unit() -> None:
    """Drawn by Vega as the PNG is: the y axis labels read 0%, 0.2%, ... rather than 0.0129."""
    spec = dict(chart_specs(_timeline(ERROR_RATE)))["metric error-rate"]
    svg = vl_convert.vegalite_to_svg(spec, vl_version=VEGA_LITE)
    y_axis = svg[svg.index("Y-axis") :]
    labels = re.findall(r"role-axis-label.*?</g>", y_axis)[0]
    ticks = re.findall(r">([^<>]+)</text>", labels)
    assert ticks and all(t.endswith("%") for t in ticks), ticks
    values = [float(t.rstrip("%")) for t in ticks]
    assert values[0] == 0 and max(values) >= 1  # the bound, 1%, is on the axis
    assert all(len(t) <= 5 for t in ticks), ticks


def test_without_vl_convert_the_report_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # import fails, as when not installed
    with pytest.raises(MissingRenderer) as raised:
        check_renderer()
    assert str(raised.value) == INSTALL_HINT and "pip install 'modelgate-operator[report]'" in INSTALL_HINT


def _drawn(vega: dict[str, Any], layer: str) -> dict[str, list[Any]]:
    """What each view of a compiled Vega spec draws as the layer `layer`: its rows' values, by the
    view (a concatenation's group, or "" for a single chart)."""
    data = {d["name"]: d for d in vega["data"]}

    def rows(name: str) -> list[dict[str, Any]]:
        dataset = data[name]
        return dataset["values"] if "values" in dataset else rows(dataset["source"])

    def marks(group: dict[str, Any], view: str) -> list[tuple[str, list[Any]]]:
        found = []
        for mark in group.get("marks", []):
            if mark["type"] == "group":
                found += marks(mark, mark["name"])
            elif mark["name"] == f"{layer}_marks" or mark["name"].endswith(f"_{layer}_marks"):
                found.append((view, [row["value"] for row in rows(mark["from"]["data"])]))
        return found

    return dict(marks(vega, ""))


def test_each_chart_of_the_png_draws_its_own_metric_as_the_page_does() -> None:
    """Three metrics far apart: in the PNG (one Vega spec, the charts concatenated) each chart's
    line and bound are its own metric's, the same as the page's chart of that metric draws."""

    def flat(name: str, value: float, bound: float, unit: str) -> MetricTrace:
        points = tuple((T + s, value) for s in range(40))
        return MetricTrace(name, "q", points, bounds=(("max", bound),), rule=f"<= {bound}", unit=unit)

    metrics = (flat("error-rate", 0.3, 0.01, "ratio"), flat("p99", 1.5, 1.0, "seconds"))
    metrics += (flat("tokens", 4000.0, 9000.0, "tokens/s"),)
    timeline = _timeline(*metrics)
    png = vl_convert.vegalite_to_vega(png_chart(timeline), vl_version=VEGA_LITE)
    png_lines, png_bounds = _drawn(png, "candidate"), _drawn(png, "bound")
    page = dict(chart_specs(timeline))
    for index, metric in enumerate(metrics, start=1):  # the PNG's first chart is the weights'
        view = f"concat_{index}_group"
        drawn = vl_convert.vegalite_to_vega(page[f"metric {metric.name}"], vl_version=VEGA_LITE)
        assert set(png_lines[view]) == set(_drawn(drawn, "candidate")[""]) == {metric.candidate[0][1]}
        assert png_bounds[view] == _drawn(drawn, "bound")[""] == [metric.bounds[0][1]]
    assert len({tuple(line) for line in png_lines.values()}) == 3
