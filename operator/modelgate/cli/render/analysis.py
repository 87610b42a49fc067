"""The analysis table of `modelgate status`: each metric's latest value, threshold and verdict,
narrowed to the console by moving columns under it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from modelgate.api import (
    ConfidenceBounds,
    MetricAnalysis,
    ModelRolloutStatus,
    QuantileBounds,
)
from modelgate.cli.render.gate import VERDICT_STYLE

ANALYSIS_COLUMNS = ("Metric", "Value", "Incumbent", "Threshold", "Verdict", "Failures", "At", "Detail")
# Moved under the table, in this order, while the table does not fit the console unwrapped.
MOVABLE_COLUMNS = ("Detail", "At", "Threshold")
# Shown even when every cell is empty ("-"): the metric and its verdict.
ALWAYS_SHOWN = ("Metric", "Verdict")
# Never folded nor cut, however narrow the console: a verdict or a number is read whole or not at all.
WHOLE_COLUMNS = ("Value", "Incumbent", "Verdict", "Failures", "At")
EMPTY_CELL = "-"


def threshold_text(metric: Mapping[str, Any], value: Callable[[float], str] = "{:g}".format) -> str:
    """The metric's rule in words, from its spec as stored (camelCase); `value` writes a bound in
    the metric's unit (a ratio's factors of the incumbent have none)."""
    parts = []
    if metric.get("min") is not None:
        parts.append(f">= {value(metric['min'])}")
    if metric.get("max") is not None:
        parts.append(f"<= {value(metric['max'])}")
    compare = metric.get("compare") or {}
    if compare.get("maxRatio") is not None:
        parts.append(f"<= {compare['maxRatio']:g} x incumbent")
    if compare.get("maxIncrease") is not None:
        parts.append(f"<= incumbent + {value(compare['maxIncrease'])}")
    if compare.get("minRatio") is not None:
        parts.append(f">= {compare['minRatio']:g} x incumbent")
    if compare.get("confidence"):
        parts[-1] += f" (anytime-valid, alpha {compare['confidence'].get('alpha', 0.05):g})"
    if metric.get("sequential"):
        parts.append(_sequential_rule(metric["sequential"]))
    text = " and ".join(parts)
    return f"{text} (dry run)" if metric.get("dryRun") else text


def _sequential_rule(test: Mapping[str, Any]) -> str:
    text = f"sequential test, alpha {test.get('alpha', 0.05):g}"
    if test.get("tolerance", 1.0) != 1.0:
        text += f", fails above {test['tolerance']:g} x incumbent"
    if test.get("margin") is not None:
        text += f", passes below {test['margin']:g} x incumbent"
    if test.get("marginIncrease") is not None:
        text += f", passes below incumbent + {test['marginIncrease']:g}"
    return text


def bounds_text(bounds: ConfidenceBounds) -> str:
    """The evidence on counts, from its fields: the rate ratio's interval and the e-values."""
    lower = "0" if bounds.rate_ratio_lower is None else f"{bounds.rate_ratio_lower:.3g}"
    upper = "inf" if bounds.rate_ratio_upper is None else f"{bounds.rate_ratio_upper:.3g}"
    bar = 1 / bounds.alpha
    text = (
        f"rate ratio in ({lower}, {upper}); evidence of harm {math.exp(bounds.log_evidence):.3g} of {bar:g}"
    )
    if bounds.log_margin_evidence is not None:
        text += f", within the margin {math.exp(bounds.log_margin_evidence):.3g} of {bar:g}"
    if bounds.increase_lower is not None:
        text += f"; increase at least {bounds.increase_lower:.4g}"
    if bounds.increase_upper is not None:
        text += f"; increase at most {bounds.increase_upper:.4g}"
    return text


def quantile_bounds_text(bounds: QuantileBounds) -> str:
    """Each side's quantile bounds from their fields: bucket boundaries, in seconds."""

    def side(lower: float | None, upper: float | None) -> str:
        return f"({0 if lower is None else lower:g}, {'inf' if upper is None else f'{upper:g}'}]s"

    return (
        f"P{bounds.quantile * 100:g} candidate in {side(bounds.candidate_lower, bounds.candidate_upper)}, "
        f"incumbent in {side(bounds.incumbent_lower, bounds.incumbent_upper)}, alpha {bounds.alpha:g} each"
    )


def number_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


@dataclass(frozen=True)
class MetricRow:
    """One metric's latest evaluation, as the analysis shows it."""

    name: str
    value: str
    incumbent: str
    threshold: str
    verdict: Text
    failures: str
    at: str | None  # HH:MM:SS, None before the metric's first evaluation
    detail: str

    def cell(self, column: str) -> RenderableType:
        cells: dict[str, RenderableType] = {
            "Metric": self.name,
            "Value": self.value,
            "Incumbent": self.incumbent,
            "Threshold": self.threshold,
            "Verdict": self.verdict,
            "Failures": self.failures,
            "At": self.at or EMPTY_CELL,
            "Detail": self.detail,
        }
        return cells[column]

    def note(self, moved: tuple[str, ...]) -> str:
        """The moved columns' cells, as the text after the metric's name in a line under the table."""
        when = f" at {self.at}" if "At" in moved and self.at else ""
        rule = f"rule {self.threshold}" if "Threshold" in moved and self.threshold else ""
        detail = self.detail if "Detail" in moved else ""
        said = "; ".join(part for part in (rule, detail) if part)
        return f"{when}: {said}" if said else ""


@dataclass(frozen=True)
class AnalysisView:
    """The analysis as wide as the console allows: a table of one line per metric, without the columns
    no metric has a value in, with as many columns as fit unwrapped; under it the columns moved out,
    one line for the metrics that say the same."""

    rows: tuple[MetricRow, ...]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        layouts = _layouts(tuple(c for c in ANALYSIS_COLUMNS if c in ALWAYS_SHOWN or self._filled(c)))
        tables = [self._table(columns) for columns in layouts]
        table = next((t for t in tables if _fits(console, options, t)), tables[-1])
        yield table
        shown = {str(column.header) for column in table.columns}
        moved = tuple(c for c in MOVABLE_COLUMNS if c in layouts[0] and c not in shown)
        notes: dict[str, list[str]] = {}
        for row in self.rows:
            if note := row.note(moved):
                notes.setdefault(note, []).append(row.name)
        for note, names in notes.items():
            yield Text.assemble((", ".join(names), "bold"), note)

    def _filled(self, column: str) -> bool:
        return any(row.cell(column) not in (EMPTY_CELL, "") for row in self.rows)

    def _table(self, columns: tuple[str, ...]) -> Table:
        # Light rules: a boxed table would leave too little of 80 columns for the cells.
        table = Table(
            title="Analysis",
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
        )
        for column in columns:
            if column in WHOLE_COLUMNS:
                table.add_column(column, no_wrap=True, min_width=_widest(column, self.rows))
            else:  # too narrow a console folds a name or a rule, never cuts it
                table.add_column(column, overflow="fold", min_width=len(column))
        for row in self.rows:
            table.add_row(*(row.cell(column) for column in columns))
        return table


def _layouts(columns: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The columns, then without each movable one in turn: widest first."""
    layouts = [columns]
    for movable in MOVABLE_COLUMNS:
        layouts.append(tuple(c for c in layouts[-1] if c != movable))
    return layouts


def _widest(column: str, rows: tuple[MetricRow, ...]) -> int:
    return max([len(column), *(Text.from_markup(str(row.cell(column))).cell_len for row in rows)])


def _fits(console: Console, options: ConsoleOptions, table: Table) -> bool:
    """Whether every cell of the table fits on one line. Measured one column wider than the console,
    because a measurement is clamped to the width it is given."""
    wider = options.update_width(options.max_width + 1)
    return console.measure(table, options=wider).maximum <= options.max_width


def metric_rows(spec: dict[str, Any], status: ModelRolloutStatus) -> tuple[MetricRow, ...]:
    last = {m.name: m for m in status.analysis}
    window = (spec.get("watch") or {}).get("metrics") if status.watch_ends_at is not None else None
    return tuple(
        _metric_row(metric, last.get(metric["name"]))
        for metric in window or (spec.get("analysis") or {}).get("metrics", [])
    )


def _metric_row(metric: dict[str, Any], record: MetricAnalysis | None) -> MetricRow:
    limit = metric.get("failureLimit", 0)
    if record is None:
        return MetricRow(
            name=metric["name"],
            value="-",
            incumbent="-",
            threshold=threshold_text(metric),
            verdict=Text("-"),
            failures=_failures(0, limit),
            at=None,
            detail="not evaluated yet",
        )
    return MetricRow(
        name=metric["name"],
        value=number_text(record.value),
        incumbent=number_text(record.incumbent_value),
        threshold=threshold_text(metric),
        verdict=Text(record.verdict.value, style=VERDICT_STYLE[record.verdict]),
        failures=_failures(record.failures, limit),
        at=record.time.strftime("%H:%M:%S"),
        detail=_detail(metric, record),
    )


def _failures(count: int, limit: int) -> str:
    """Not "1/0", which reads as a fraction."""
    return f"{count} (limit {limit})"


def _detail(metric: dict[str, Any], record: MetricAnalysis) -> str:
    """The verdict's reason, and for a sequential test how far its evidence is from a rollback."""
    evidence = record.sequential
    if evidence is not None and evidence.bounds is not None:
        return bounds_text(evidence.bounds)
    if record.quantiles is not None and record.quantiles.bounds is not None:
        return quantile_bounds_text(record.quantiles.bounds)
    if evidence is None or not metric.get("sequential"):
        return record.message or ""
    limit = 1 / float(metric["sequential"].get("alpha", 0.05))
    return f"{record.message or ''}; evidence {math.exp(evidence.log_evidence):.3g} of {limit:g}".lstrip("; ")
