"""What the engine needs from a metrics backend: one number per query, or a reason why not."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class QueryResult:
    """The outcome of one query. Failures are data here, never exceptions.

    value: the single sample, or None when the query matched nothing or failed. NaN is kept as NaN.
    error: why the query failed (unreachable, timeout, HTTP or PromQL error, unexpected shape).
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


class MetricProvider(Protocol):
    """A metrics backend. Calls block; the operator runs them in a worker thread."""

    def query(self, promql: str) -> QueryResult:
        """Run an instant query; never raises for backend or query failures."""
        ...

    def is_online(self) -> bool:
        """Whether the backend answers queries right now."""
        ...
