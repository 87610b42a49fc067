"""A metric provider over recorded history, answering as an instant query would have then.

A metric provider over recorded history: every query answered at a moment from the values a
range query returned for it, as an instant query would have answered then. It does no I/O; the
ranges are fetched beforehand (`PrometheusClient.query_range`), so a replay of a rollout's analysis
runs the same engine over the past with a simulated clock."""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from modelgate.api import ModelRolloutSpec
from modelgate.core import AnalysisRun, QueryResult
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.provider import AnalysisPlan, run_plan


@dataclass(frozen=True)
class RecordedSeries:
    """One query's values over a range, one sample every `step` seconds, oldest first; or why the
    range could not be had (`error`). A sample answers for the `step` seconds after it: a range query
    has a sample at every step at which an instant query would have had a value."""

    points: tuple[tuple[float, float], ...] = ()  # (unix seconds, value)
    step: float = 1.0
    error: str | None = None
    _times: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_times", tuple(t for t, _ in self.points))

    def at(self, moment: datetime) -> QueryResult:
        if self.error is not None:
            return QueryResult(error=self.error)
        when = moment.timestamp()
        index = bisect.bisect_right(self._times, when + 1e-6) - 1
        if index < 0 or when - self._times[index] >= self.step:
            return QueryResult()  # nothing recorded then: an empty result, as the instant query's
        return QueryResult(value=self.points[index][1], sample_count=1)

    def finite(self) -> list[tuple[float, float]]:
        return [(t, v) for t, v in self.points if math.isfinite(v)]


class RecordedProvider:
    """MetricProvider: the plan of the live provider (the same PromQL), answered from `history`,
    keyed by query. A query with no history is an Error result, as an unreachable backend's."""

    def __init__(self, history: Mapping[str, RecordedSeries]) -> None:
        self.history = history

    def plan(self, spec: ModelRolloutSpec, namespace: str) -> AnalysisPlan:
        # InferencePool sides are planned without their Pods (which Pods a pool selected in the
        # past is not recorded): such a side needs its podRegex in the replayed spec, and a side
        # judged per accelerator its spec.analysis.accelerators count. Nor is its endpoint picker:
        # source llm-d selects its series by namespace and target model only.
        return analysis_plan(spec, namespace)

    def run(self, plan: AnalysisPlan, at: datetime) -> AnalysisRun:
        def answer(query: str) -> QueryResult:
            series = self.history.get(query)
            return QueryResult(error=f"no history fetched for {query}") if series is None else series.at(at)

        return run_plan(plan, at, answer)
