"""From a rollout's spec to one analysis run: the PromQL of every metric, and running it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from modelgate.api import ModelRolloutSpec
from modelgate.core.model import AnalysisRun, MetricQuery
from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import preset_query, request_count_query
from modelgate.metrics.provider import MetricProvider, QueryResult
from modelgate.metrics.template import render_query


@dataclass(frozen=True)
class AnalysisQueries:
    request_count: str
    metrics: Mapping[str, str]  # metric name -> PromQL


def analysis_queries(spec: ModelRolloutSpec, namespace: str) -> AnalysisQueries:
    """Every query the analysis runs; raises QueryContextError/TemplateError for unusable specs."""
    assert spec.analysis is not None
    ctx = QueryContext.for_rollout(
        namespace,
        spec.incumbent.deployment,
        spec.candidate.deployment,
        spec.analysis.interval,
        incumbent_pod_regex=spec.incumbent.pod_regex,
        candidate_pod_regex=spec.candidate.pod_regex,
    )
    metrics = {
        metric.name: preset_query(metric.preset, ctx)
        if metric.preset
        else render_query(metric.query or "", ctx)
        for metric in spec.analysis.metrics
    }
    return AnalysisQueries(request_count_query(ctx), metrics)


def run_analysis(provider: MetricProvider, queries: AnalysisQueries, at: datetime) -> AnalysisRun:
    return AnalysisRun(
        at=at,
        request_count=provider.query(queries.request_count),
        metrics={
            name: MetricQuery(promql, provider.query(promql)) for name, promql in queries.metrics.items()
        },
    )


def failed_analysis(queries: AnalysisQueries, at: datetime, error: str) -> AnalysisRun:
    """A run in which no query could be sent (e.g. the Prometheus credentials are unreadable)."""
    failed = QueryResult(error=error)
    return AnalysisRun(
        at=at,
        request_count=failed,
        metrics={name: MetricQuery(promql, failed) for name, promql in queries.metrics.items()},
    )
