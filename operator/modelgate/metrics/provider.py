"""The one interface every metric provider implements."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from modelgate.api import AnalysisSpec, ModelRolloutSpec, RollbackReason
from modelgate.api.series import MissingSeries, SeriesComponent, SeriesSide
from modelgate.core import Accelerators, AnalysisRun, MetricQuery, QueryResult, SideBuckets, SideTotals
from modelgate.core.notifying import BreachEvidence


@dataclass(frozen=True)
class CountQueries:
    """One side's requests, and events among them, as two queries: cumulative totals for the
    sequential test (presets also build rates with it)."""

    requests: str
    events: str


@dataclass(frozen=True)
class BucketQueries:
    """One side's histogram as totals: the +Inf bucket's count, and each boundary's (in seconds)."""

    total: str
    within: tuple[tuple[float, str], ...]


@dataclass(frozen=True)
class SeriesProbe:
    """One series a preset reads, who exports it, and each side's query counting its series."""

    series: str
    exporter: SeriesComponent
    queries: tuple[tuple[SeriesSide, str], ...]


@dataclass(frozen=True)
class MetricPlan:
    candidate: str  # the query of the candidate's value
    incumbent: str | None = None  # the same for the incumbent, when the metric compares
    # For a sequential test: the candidate's and the incumbent's totals. The engine counts what they
    # grew by between evaluations: exact, where a count over a window loses or repeats increments.
    totals: tuple[CountQueries, CountQueries] | None = None
    # The query whose series' exemplars point at the requests behind a breach; None: `candidate`.
    exemplars: str | None = None
    # The series it reads (a preset's), asked after when it has no data.
    series: tuple[SeriesProbe, ...] = ()
    # The incumbent's query for every metric (None where it reads the same series as the candidate's):
    # what `modelgate report` draws beside the candidate; the operator asks only `incumbent`.
    incumbent_drawn: str | None = None
    # Divides or multiplies by the sides' accelerators: not asked while a side has none.
    per_accelerator: bool = False
    # For a quantile comparison with confidence: the candidate's and the incumbent's histograms.
    buckets: tuple[BucketQueries, BucketQueries] | None = None


@dataclass(frozen=True)
class AnalysisPlan:
    """Every query one rollout's analysis runs, in the provider's query language."""

    namespace: str
    analysis: AnalysisSpec
    request_count: str  # the candidate's requests in the window, against minRequests
    incumbent_request_count: str | None  # the same for the incumbent, when a metric needs it
    metrics: Mapping[str, MetricPlan]
    window: timedelta = timedelta(minutes=1)  # the range the queries look back over
    # Metrics whose query cannot be built, each with why (naming its field): an Error at each run,
    # while the other metrics go on judging.
    unbuildable: Mapping[str, str] = field(default_factory=dict)
    # Each side's accelerators, where a metric is per accelerator or both sides have a price.
    accelerators: Accelerators | None = None
    # Each side's output tokens in the window (candidate, incumbent), for status.cost.
    output_tokens: tuple[str, str] | None = None


class MetricProvider(Protocol):
    """A metrics backend, one instance per operator (it may keep connections). Calls block; the
    operator runs them in worker threads."""

    def plan(self, spec: ModelRolloutSpec, namespace: str) -> AnalysisPlan:
        """The queries for `spec` (which has an analysis), with the metrics whose query cannot be built
        in `unbuildable`; raises ValueError naming what in the spec keeps every query from being built.
        Either fails a rollout that has not started, and is an analysis error in one that has."""
        ...

    def run(self, plan: AnalysisPlan, at: datetime) -> AnalysisRun:
        """Runs every query of the plan; a backend that cannot be asked gives Error results, never an
        exception."""
        ...


Query = Callable[[str], QueryResult]


def run_plan(plan: AnalysisPlan, at: datetime, query: Query) -> AnalysisRun:
    """Every query of the plan through `query` (one backend's way of answering a query at `at`)."""
    measured = {
        name: MetricQuery(metric.candidate, QueryResult())
        if _unaccelerated(plan, metric)
        else _measure(query, metric)
        for name, metric in plan.metrics.items()
    }
    unbuilt = {
        name: MetricQuery("", QueryResult(error=problem)) for name, problem in plan.unbuildable.items()
    }
    incumbent = plan.incumbent_request_count
    return AnalysisRun(
        at,
        query(plan.request_count),
        measured | unbuilt,
        incumbent_request_count=query(incumbent) if incumbent is not None else None,
        window=plan.window,
        accelerators=plan.accelerators,
        output_tokens=(query(plan.output_tokens[0]), query(plan.output_tokens[1]))
        if plan.output_tokens
        else None,
    )


def _unaccelerated(plan: AnalysisPlan, metric: MetricPlan) -> bool:
    """A per-accelerator metric while a side has no accelerators: not asked (it would divide by
    zero); the engine judges it Inconclusive, saying which side."""
    accelerators = plan.accelerators
    return metric.per_accelerator and accelerators is not None and accelerators.missing() is not None


def plan_queries(plan: AnalysisPlan) -> Iterator[str]:
    """Every query `run_plan` asks, each once, in the order it asks them."""
    seen: set[str] = set()
    for query in _asked(plan):
        if query not in seen:
            seen.add(query)
            yield query


def _asked(plan: AnalysisPlan) -> Iterator[str]:
    yield plan.request_count
    if plan.incumbent_request_count is not None:
        yield plan.incumbent_request_count
    for metric in plan.metrics.values():
        if _unaccelerated(plan, metric):
            continue
        yield metric.candidate
        if metric.incumbent is not None:
            yield metric.incumbent
        for side in metric.totals or ():
            yield from (side.requests, side.events)
        for histogram in metric.buckets or ():
            yield histogram.total
            yield from (query for _, query in histogram.within)
    yield from plan.output_tokens or ()


def _measure(query: Query, metric: MetricPlan) -> MetricQuery:
    totals = None
    if metric.totals is not None:
        candidate, incumbent = (
            SideTotals(query(side.requests), query(side.events)) for side in metric.totals
        )
        totals = (candidate, incumbent)
    result = query(metric.candidate)
    no_data = result.is_empty or result.is_nan
    return MetricQuery(
        metric.candidate,
        result,
        incumbent=query(metric.incumbent) if metric.incumbent is not None else None,
        totals=totals,
        buckets=_read_buckets(query, metric.buckets),
        missing=_missing(query, metric.series) if no_data else (),
    )


def _read_buckets(
    query: Query, plan: tuple[BucketQueries, BucketQueries] | None
) -> tuple[SideBuckets, SideBuckets] | None:
    if plan is None:
        return None
    candidate, incumbent = (
        SideBuckets(query(side.total), tuple((bound, query(q)) for bound, q in side.within)) for side in plan
    )
    return candidate, incumbent


def _missing(query: Query, probes: tuple[SeriesProbe, ...]) -> tuple[MissingSeries, ...]:
    """The series Prometheus has none of, and for which sides (a failed probe says nothing)."""
    missing = []
    for probe in probes:
        sides = tuple(side for side, promql in probe.queries if query(promql).is_empty)
        if sides:
            missing.append(MissingSeries(series=probe.series, provided_by=probe.exporter, sides=sides))
    return tuple(missing)


@runtime_checkable
class BreachExplainer(Protocol):
    """A provider that can say which requests and pods stood behind a breach (optional: a provider
    without it leaves status.rollbackReason's traces and pods empty)."""

    def explain(self, spec: ModelRolloutSpec, namespace: str, reason: RollbackReason) -> BreachEvidence:
        """Never raises: what cannot be read is left out (and logged)."""
        ...
