"""Range queries for `report` and `replay`, with a progress bar: the only I/O either does against
Prometheus."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from modelgate.metrics.prometheus_http import PrometheusClient
from modelgate.metrics.recorded import RecordedSeries

# Prometheus refuses a range query of more than 11,000 points.
MAX_POINTS = 10_000


def resolution(start: datetime, end: datetime, wanted: timedelta) -> timedelta:
    """`wanted`, or coarser where the span would need more points than Prometheus returns."""
    return max(wanted, (end - start) / MAX_POINTS, timedelta(seconds=1))


def fetch_ranges(
    client: PrometheusClient,
    queries: Sequence[str],
    start: datetime,
    end: datetime,
    step: timedelta,
    console: Console,
) -> dict[str, RecordedSeries]:
    fetched: dict[str, RecordedSeries] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(f"range queries to {client.address}", total=len(queries))
        for query in queries:
            fetched[query] = client.query_range(query, start, end, step)
            progress.advance(task)
    return fetched
