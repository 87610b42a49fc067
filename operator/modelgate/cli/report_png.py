"""A Timeline as a PNG, with matplotlib: the same charts as the HTML page, one under the other.

matplotlib is not among modelgate's dependencies (it is large, and the operator never draws): it is
the `png` extra, `pip install 'modelgate[png]'`; without it `--png` says so and the HTML page, which
needs nothing, is still written."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from modelgate.cli.timeline import Points, Timeline

INSTALL_HINT = "writing a PNG needs matplotlib: pip install 'modelgate[png]'"


class MissingPlotting(RuntimeError):
    pass


def write_png(timeline: Timeline, path: Path) -> None:
    try:
        import matplotlib  # only --png needs it

        matplotlib.use("Agg")
        from matplotlib import pyplot
    except ImportError:
        raise MissingPlotting(INSTALL_HINT) from None
    rows = 1 + len(timeline.metrics)
    figure, axes = pyplot.subplots(rows, 1, figsize=(11, 2.4 * rows), sharex=True, squeeze=False)
    weight_axes = axes[0][0]
    weight_axes.step(*_dates(_extended(timeline.weights, timeline.end)), where="post", color="#1565c0")
    weight_axes.set_ylim(-3, 103)
    weight_axes.set_ylabel("candidate %")
    weight_axes.set_title(timeline.title, loc="left", fontsize=11)
    for row, metric in enumerate(timeline.metrics, start=1):
        chart = axes[row][0]
        chart.set_ylabel(metric.name)
        if metric.incumbent:
            chart.plot(*_dates(metric.incumbent), color="#777", linestyle="--", label="incumbent")
        if metric.candidate:
            chart.plot(*_dates(metric.candidate), color="#1565c0", label="candidate")
        for kind, value in metric.bounds:
            chart.axhline(value, color="#c62828", linestyle=":", label=f"{kind} {value:g}")
        for label, points in metric.relative:
            chart.plot(*_dates(points), color="#c62828", linestyle=":", label=f"limit: {label}")
        chart.legend(loc="upper left", fontsize=8)
    for row in axes:
        for mark in timeline.marks:
            style: dict[str, Any] = (
                {"color": "#c62828", "linewidth": 1.5}
                if mark.kind == "rollback"
                else {"color": "#999", "linestyle": ":"}
            )
            row[0].axvline(_date(mark.time), **style)
    for mark in timeline.marks:
        weight_axes.annotate(mark.label, (_date(mark.time), 100), fontsize=7, rotation=90, va="top")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def _extended(points: Points, end: float) -> Points:
    return (*points, (end, points[-1][1])) if points else points


def _dates(points: Points) -> tuple[list[datetime], list[float]]:
    finite = [(t, v) for t, v in points if not math.isnan(v)]
    return [_date(t) for t, _ in finite], [v for _, v in finite]


def _date(time: float) -> datetime:
    return datetime.fromtimestamp(time, UTC)
