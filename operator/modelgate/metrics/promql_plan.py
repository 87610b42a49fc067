"""A rollout's analysis as PromQL: every metric's query for the candidate and, where the metric
compares, for the incumbent; for a sequential test, the total counts of both sides. Presets
read the series of the metric's source, or of `spec.analysis.source`."""

from __future__ import annotations

from modelgate.api import MetricSpec, ModelRolloutSpec
from modelgate.metrics.base import AnalysisPlan, CountQueries, MetricPlan
from modelgate.metrics.context import QueryContext, Side
from modelgate.metrics.presets import count_queries, preset_query, request_count_query
from modelgate.metrics.template import render_query


def analysis_plan(spec: ModelRolloutSpec, namespace: str) -> AnalysisPlan:
    """Raises a ValueError (QueryContextError, UnknownPresetError, TemplateError) naming the metric's
    field for a spec no query can be built from."""
    analysis = spec.analysis
    assert analysis is not None
    ctx = QueryContext.for_rollout(
        namespace,
        spec.incumbent.deployment,
        spec.candidate.deployment,
        analysis.interval,
        incumbent_pod_regex=spec.incumbent.pod_regex,
        candidate_pod_regex=spec.candidate.pod_regex,
        incumbent_model=spec.incumbent.model,
        candidate_model=spec.candidate.model,
    )
    metrics = {
        metric.name: _metric_plan(index, metric, metric.source or analysis.source, ctx)
        for index, metric in enumerate(analysis.metrics)
    }
    against_incumbent = any(m.compare is not None or m.sequential is not None for m in analysis.metrics)
    return AnalysisPlan(
        namespace,
        analysis,
        request_count_query(analysis.source, ctx),
        request_count_query(analysis.source, ctx, "incumbent") if against_incumbent else None,
        metrics,
    )


def _metric_plan(index: int, metric: MetricSpec, source: str, ctx: QueryContext) -> MetricPlan:
    def query(side: Side) -> str:
        if metric.preset is not None:
            return preset_query(metric.preset, source, ctx, side, threshold=metric.threshold)
        return render_query(metric.query or "", ctx, side)

    try:
        candidate = query("candidate")
    except ValueError as error:  # an unknown preset, a template that does not render
        field = "query" if metric.preset is None else "source" if metric.source is not None else "preset"
        raise ValueError(f"spec.analysis.metrics[{index}].{field} (metric {metric.name}): {error}") from None
    totals = _totals(metric, source, ctx) if metric.sequential is not None else None
    return MetricPlan(candidate, query("incumbent") if metric.compare else None, totals)


def _totals(metric: MetricSpec, source: str, ctx: QueryContext) -> tuple[CountQueries, CountQueries]:
    assert metric.preset is not None
    candidate = count_queries(metric.preset, source, ctx, "candidate", threshold=metric.threshold)
    incumbent = count_queries(metric.preset, source, ctx, "incumbent", threshold=metric.threshold)
    assert candidate is not None and incumbent is not None, "the API allows sequential on rate presets only"
    return candidate, incumbent
