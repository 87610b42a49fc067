"""A Timeline as a PNG, with matplotlib: the same charts as the HTML page, one under the other.

matplotlib is not among modelgate's dependencies (it is large, and the operator never draws): it is
the `png` extra, `pip install 'modelgate[png]'`; without it `--png` says so and the HTML page, which
needs nothing, is still written."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from modelgate.cli.report_units import NON_NEGATIVE, shown, suffix
from modelgate.cli.timeline import Points, Timeline

INSTALL_HINT = "writing a PNG needs matplotlib: pip install 'modelgate[png]'"


class MissingPlotting(RuntimeError):
    pass


def write_png(timeline: Timeline, path: Path) -> None:
    figure = draw(timeline)
    figure.savefig(path, dpi=100)
    from matplotlib import pyplot

    pyplot.close(figure)


def draw(timeline: Timeline) -> Any:
    """The matplotlib Figure of the timeline; MissingPlotting without matplotlib."""
    try:
        import matplotlib  # only --png needs it

        matplotlib.use("Agg")
        from matplotlib import pyplot
        from matplotlib.dates import DateFormatter
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        raise MissingPlotting(INSTALL_HINT) from None
    rows = 1 + len(timeline.metrics)
    figure, axes = pyplot.subplots(rows, 1, figsize=(11, 2.4 * rows), sharex=True, squeeze=False)
    weight_axes = axes[0][0]
    weight_axes.step(*_dates(_extended(timeline.weights, timeline.end)), where="post", color="#1565c0")
    weight_axes.set_ylim(-3, 103)
    weight_axes.set_ylabel("candidate weight (%)")
    weight_axes.set_title(f"{timeline.title}\n{timeline.outcome}", loc="left", fontsize=10, wrap=True)
    for row, metric in enumerate(timeline.metrics, start=1):
        chart = axes[row][0]
        unit = suffix(metric.unit)
        chart.set_ylabel(f"{metric.name} ({unit})" if unit else metric.name)
        chart.yaxis.set_major_formatter(FuncFormatter(lambda v, _, u=metric.unit: shown(v, u)))
        if metric.incumbent:
            chart.plot(*_dates(metric.incumbent), color="#777", linestyle="--", label="incumbent")
        if metric.candidate:
            chart.plot(*_dates(metric.candidate), color="#1565c0", label=timeline.candidate_label)
        for kind, value in metric.bounds:
            chart.axhline(value, color="#c62828", linestyle=":", label=f"{kind} {shown(value, metric.unit)}")
        for label, points in metric.relative:
            chart.plot(*_dates(points), color="#c62828", linestyle=":", label=f"limit: {label}")
        chart.legend(loc="upper left", fontsize=8)
        if metric.unit in NON_NEGATIVE:
            chart.set_ylim(bottom=0)  # a share or a rate is never below 0
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
    clock = DateFormatter("%H:%M:%S", tz=UTC)  # type: ignore[no-untyped-call]  # untyped in matplotlib
    axes[-1][0].xaxis.set_major_formatter(clock)
    axes[-1][0].set_xlabel("time (UTC)")
    figure.tight_layout()
    return figure


def _extended(points: Points, end: float) -> Points:
    return (*points, (end, points[-1][1])) if points else points


def _dates(points: Points) -> tuple[list[datetime], list[float]]:
    finite = [(t, v) for t, v in points if not math.isnan(v)]
    return [_date(t) for t, _ in finite], [v for _, v in finite]


def _date(time: float) -> datetime:
    return datetime.fromtimestamp(time, UTC)
