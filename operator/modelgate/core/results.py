"""What metric providers produce: one number per query, or why not. Failures are data, never
exceptions, so the engine decides what a failed query means for the rollout."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from modelgate.api.series import MissingSeries


@dataclass(frozen=True)
class QueryResult:
    """The outcome of one query.

    value: the single sample, or None when the query matched nothing or failed. NaN is kept as NaN.
    error: why the query failed (unreachable, timeout, HTTP or query-language error, unexpected shape).
    sample_count: how many series (or scalars) the backend returned.
    """

    value: float | None = None
    error: str | None = None
    sample_count: int = 0

    def __post_init__(self) -> None:
        if self.error is not None and self.value is not None:
            raise ValueError("a failed query has no value")

    @property
    def is_error(self) -> bool:
        return self.error is not None

    @property
    def is_empty(self) -> bool:
        """The query succeeded but matched nothing."""
        return self.error is None and self.value is None

    @property
    def is_nan(self) -> bool:
        """The query succeeded with NaN, e.g. 0/0 when no requests arrived in the window."""
        return self.value is not None and math.isnan(self.value)


@dataclass(frozen=True)
class SideTotals:
    """One side's cumulative counters at the evaluation: requests served, and events (errors, ...)
    among them, summed over its pods. The sequential test counts what they grew by."""

    requests: QueryResult
    events: QueryResult


@dataclass(frozen=True)
class SideBuckets:
    """One side's histogram at the evaluation, summed over its pods: the requests observed (+Inf
    bucket) and, per boundary in seconds, those at or below it. A quantile comparison with confidence
    counts what they grew by."""

    total: QueryResult
    within: tuple[tuple[float, QueryResult], ...]


@dataclass(frozen=True)
class MetricQuery:
    query: str  # the query that ran, for status and rollbackReason
    result: QueryResult  # the candidate's value
    incumbent: QueryResult | None = None  # the same query for the incumbent, for metrics that compare
    totals: tuple[SideTotals, SideTotals] | None = None  # candidate, incumbent: for the sequential test
    buckets: tuple[SideBuckets, SideBuckets] | None = None  # candidate, incumbent: quantile bounds
    missing: tuple[MissingSeries, ...] = ()  # with no data: the series read that Prometheus has none of


@dataclass(frozen=True)
class Accelerators:
    """Each side's accelerators as the goodput and cost presets divide or multiply by them: the spec's
    count, or the sum of the side's Ready Pods' requests of `resource`."""

    resource: str
    candidate: float
    incumbent: float

    def missing(self) -> str | None:
        """Why a per-accelerator value means nothing (a side without accelerators), or None."""
        empty = [side for side in ("candidate", "incumbent") if getattr(self, side) <= 0]
        if not empty:
            return None
        return (
            f"no accelerators on the {' and the '.join(empty)} side: no Ready Pod requests {self.resource} "
            "(set spec.analysis.accelerators.resourceName, or the side's count)"
        )


@dataclass(frozen=True)
class AnalysisRun:
    """One evaluation of every metric, taken at `at`."""

    at: datetime
    request_count: QueryResult
    metrics: Mapping[str, MetricQuery]
    incumbent_request_count: QueryResult | None = None  # asked when a metric compares or tests
    window: timedelta | None = None  # the range the queries looked back over, where known
    accelerators: Accelerators | None = None  # read when a metric is per accelerator, or for the cost
    output_tokens: tuple[QueryResult, QueryResult] | None = None  # candidate, incumbent: for the cost

    @property
    def error_count(self) -> int:
        return sum(1 for measured in self.metrics.values() if measured.result.is_error)

    def incumbent_traffic(self) -> QueryResult:
        return self.incumbent_request_count or QueryResult(error="the incumbent's requests were not counted")

    @classmethod
    def failed(cls, queries: Mapping[str, str], at: datetime, error: str) -> AnalysisRun:
        """A run in which no query could be sent (e.g. the provider's credentials are unreadable)."""
        failed = QueryResult(error=error)
        return cls(at, failed, {name: MetricQuery(query, failed) for name, query in queries.items()})
