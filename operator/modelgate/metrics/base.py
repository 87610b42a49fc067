"""The one interface every metric provider implements."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from modelgate.api import AnalysisSpec, ModelRolloutSpec
from modelgate.core import AnalysisRun


@dataclass(frozen=True)
class AnalysisPlan:
    """Every query one rollout's analysis runs, in the provider's query language."""

    namespace: str
    analysis: AnalysisSpec
    request_count: str  # the candidate's requests in the window, against minRequests
    metrics: Mapping[str, str]  # metric name -> query


class MetricProvider(Protocol):
    """A metrics backend, one instance per operator (it may keep connections). Calls block; the
    operator runs them in worker threads."""

    def plan(self, spec: ModelRolloutSpec, namespace: str) -> AnalysisPlan:
        """The queries for `spec` (which has an analysis); raises ValueError naming what in the spec
        cannot be turned into a query, which fails the rollout."""
        ...

    def run(self, plan: AnalysisPlan, at: datetime) -> AnalysisRun:
        """Runs every query of the plan; a backend that cannot be asked gives Error results, never
        an exception."""
        ...
