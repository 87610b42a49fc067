"""A rollout's analysis as PromQL: every metric's query for the candidate and, where the metric
compares, for the incumbent; for a sequential test, the counts of both sides over a window."""

from __future__ import annotations

from functools import partial

from modelgate.api import MetricSpec, ModelRolloutSpec
from modelgate.metrics.base import AnalysisPlan, CountQueries, MetricPlan
from modelgate.metrics.context import QueryContext, Side
from modelgate.metrics.presets import count_queries, preset_query, request_count_query
from modelgate.metrics.template import render_query


def analysis_plan(spec: ModelRolloutSpec, namespace: str) -> AnalysisPlan:
    """Raises a ValueError (QueryContextError, or one naming the metric's field for a query that
    cannot be built) for a spec no query can be built from."""
    analysis = spec.analysis
    assert analysis is not None
    ctx = QueryContext.for_rollout(
        namespace,
        spec.incumbent.deployment,
        spec.candidate.deployment,
        analysis.interval,
        incumbent_pod_regex=spec.incumbent.pod_regex,
        candidate_pod_regex=spec.candidate.pod_regex,
    )
    metrics = {
        metric.name: _named_metric_plan(index, metric, ctx) for index, metric in enumerate(analysis.metrics)
    }
    against_incumbent = any(m.compare is not None or m.sequential is not None for m in analysis.metrics)
    return AnalysisPlan(
        namespace,
        analysis,
        request_count_query(ctx),
        request_count_query(ctx, "incumbent") if against_incumbent else None,
        metrics,
    )


def _named_metric_plan(index: int, metric: MetricSpec, ctx: QueryContext) -> MetricPlan:
    try:
        return _metric_plan(metric, ctx)
    except ValueError as error:  # an unknown preset, a template that does not render
        raise ValueError(f"spec.analysis.metrics[{index}] ({metric.name}): {error}") from None


def _metric_plan(metric: MetricSpec, ctx: QueryContext) -> MetricPlan:
    def query(side: Side) -> str:
        if metric.preset is not None:
            return preset_query(metric.preset, ctx, side)
        return render_query(metric.query or "", ctx, side)

    counts = partial(_counts, metric, ctx) if metric.sequential is not None else None
    return MetricPlan(query("candidate"), query("incumbent") if metric.compare else None, counts)


def _counts(metric: MetricSpec, ctx: QueryContext, window: str) -> tuple[CountQueries, CountQueries]:
    assert metric.preset is not None
    candidate = count_queries(metric.preset, ctx, "candidate", window)
    incumbent = count_queries(metric.preset, ctx, "incumbent", window)
    assert candidate is not None and incumbent is not None, "the API allows sequential on rate presets only"
    return candidate, incumbent
