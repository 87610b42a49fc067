"""`modelgate status` lines on the analysis's inputs: queries that do not answer, series nobody exports.

`modelgate status` lines from status data on what the analysis cannot read: its queries that do not
answer (status.analysisCheck), and the series a metric reads that nobody exports
(analysis[].missingSeries)."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text

from modelgate.api import ModelRolloutStatus
from modelgate.api.series import COMPONENT_NAMES


def analysis_input_lines(status: ModelRolloutStatus) -> list[RenderableType]:
    lines: list[RenderableType] = []
    check = status.analysis_check
    if check is not None and check.unanswered:
        lines.append(Text(f"Queries to {check.address} do not answer:", style="bold red"))
        for query in check.unanswered:
            lines.append(Text(f"  {query.metric or 'request count (minRequests)'}: {query.error}"))
    for metric in status.analysis:
        for missing in metric.missing_series:
            sides = " and ".join(missing.sides)
            lines.append(
                Text(
                    f"{metric.name}: no series {missing.series} for the {sides}; "
                    f"exported by {COMPONENT_NAMES[missing.provided_by]}",
                    style="yellow",
                )
            )
    return lines
