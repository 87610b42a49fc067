"""A rollout's analysis as PromQL: every metric's queries, for one side or both.

A rollout's analysis as PromQL: every metric's query for the candidate and, where the metric
compares, for the incumbent; for a sequential test, the total counts of both sides. Presets
read the series of the metric's source, or of `spec.analysis.source`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from modelgate.api import (
    PER_ACCELERATOR_PRESETS,
    AcceleratorSpec,
    AnalysisSpec,
    MetricSpec,
    ModelRolloutSpec,
    WorkloadRef,
)
from modelgate.api.duration import parse_duration
from modelgate.core import Accelerators
from modelgate.kube.pools import PoolPod
from modelgate.kube.workload_status import serving_pod_regex
from modelgate.metrics.context import (
    QueryContext,
    Side,
    default_pod_regex,
    named_pods_regex,
    pool_pod_regex,
)
from modelgate.metrics.presets import (
    bucket_queries,
    count_queries,
    exemplar_query,
    output_tokens_query,
    preset_query,
    request_count_query,
    series_probes,
)
from modelgate.metrics.provider import AnalysisPlan, BucketQueries, CountQueries, MetricPlan, SeriesProbe
from modelgate.metrics.template import render_query


def analysis_plan(
    spec: ModelRolloutSpec,
    namespace: str,
    pool_pods: Mapping[Side, Sequence[PoolPod] | None] | None = None,
    requested: Mapping[Side, float] | None = None,
    pickers: Mapping[Side, str | None] | None = None,
    member_pods: Mapping[tuple[Side, str], Sequence[str]] | None = None,
) -> AnalysisPlan:
    """A metric whose query cannot be built (UnknownPresetError, TemplateError) is in `unbuildable`,
    naming its field; a spec no query at all can be built from raises ValueError (QueryContextError,
    or the first metric's). `pool_pods`: the Pods each InferencePool side selects (None: the pool
    does not exist), and each workload side's serving Pods, for the sides whose pod regex is made
    from their Pods (lists_pods). `requested`: the accelerators each
    side's Ready Pods request, for the sides whose count the spec does not set. `pickers`: the
    endpoint picker Service of each InferencePool side (None: the pool names none, or does not exist);
    not given: the pools were not looked up. `member_pods`: by side and role, the Pods of the group
    members that are not Deployments, for the metrics that name a role."""
    analysis = spec.analysis
    assert analysis is not None
    pools = pool_pods or {}
    accelerators = side_accelerators(analysis, requested or {})
    ctx = QueryContext.for_rollout(
        namespace,
        spec.incumbent.name,
        spec.candidate.name,
        analysis.interval,
        incumbent_pod_regex=_pod_regex(spec.incumbent, pools.get("incumbent"), pools.get("candidate")),
        candidate_pod_regex=_pod_regex(spec.candidate, pools.get("candidate"), pools.get("incumbent")),
        incumbent_model=spec.incumbent.reported_model,
        candidate_model=spec.candidate.reported_model,
        adapters=spec.candidate.adapter is not None,
        pickers=_pickers(spec, pickers),
        **_gateway_routing(spec),
        accelerators=(accelerators.incumbent, accelerators.candidate),
        prices=_prices(analysis),
    )
    metrics: dict[str, MetricPlan] = {}
    unbuildable: dict[str, str] = {}
    for index, metric in enumerate(analysis.metrics):
        try:
            role_ctx = _role_context(ctx, spec, metric.role, member_pods or {})
            metrics[metric.name] = _metric_plan(index, metric, metric.source or analysis.source, role_ctx)
        except ValueError as error:
            unbuildable[metric.name] = str(error)
    if not metrics:  # not one query: the spec's problem, not a metric's
        raise ValueError(next(iter(unbuildable.values())))
    against_incumbent = any(m.compare is not None or m.sequential is not None for m in analysis.metrics)
    return AnalysisPlan(
        namespace,
        analysis,
        request_count_query(analysis.source, ctx),
        request_count_query(analysis.source, ctx, "incumbent") if against_incumbent else None,
        metrics,
        parse_duration(ctx.interval),
        unbuildable,
        accelerators if needs_accelerators(analysis) else None,
        _output_tokens(analysis, ctx),
    )


def needs_accelerators(analysis: AnalysisSpec) -> bool:
    """A metric is per accelerator, or both sides have a price (status.cost)."""
    return analysis.priced or any(m.preset in PER_ACCELERATOR_PRESETS for m in analysis.metrics)


def _output_tokens(analysis: AnalysisSpec, ctx: QueryContext) -> tuple[str, str] | None:
    if not analysis.priced:
        return None
    candidate = output_tokens_query(analysis.source, ctx, "candidate")
    incumbent = output_tokens_query(analysis.source, ctx, "incumbent")
    return None if candidate is None or incumbent is None else (candidate, incumbent)


def side_accelerators(analysis: AnalysisSpec, requested: Mapping[Side, float]) -> Accelerators:
    """Each side's accelerators: the spec's count where set, else what its Ready Pods request (0
    where they were not counted)."""
    spec = analysis.accelerators or AcceleratorSpec()
    return Accelerators(
        spec.resource_name,
        candidate=_or_requested(spec.candidate.count, requested.get("candidate")),
        incumbent=_or_requested(spec.incumbent.count, requested.get("incumbent")),
    )


def _or_requested(count: float | None, requested: float | None) -> float:
    return count if count is not None else requested or 0.0


def _prices(analysis: AnalysisSpec) -> tuple[float | None, float | None]:
    spec = analysis.accelerators
    if spec is None:
        return None, None
    return spec.incumbent.price_per_hour, spec.candidate.price_per_hour


def _gateway_routing(spec: ModelRolloutSpec) -> dict[str, Any]:
    """The routes and backends of gatewayAPI routing, for sources that count at the gateway."""
    routing = spec.traffic_routing.gateway_api
    if routing is None:
        return {}
    routes = tuple(
        f"httproute/{ref.http_route}" if ref.http_route is not None else f"grpcroute/{ref.grpc_route}"
        for ref in routing.route_refs
    )
    return {"gateway_routes": routes, "backends": (routing.incumbent_backend, routing.candidate_backend)}


def lists_pods(ref: WorkloadRef) -> bool:
    """Whether the side's pod regex is made from its Pods as listed: an InferencePool's, or a
    workload's whose kind does not fix its Pods' names (without a podRegex in the spec)."""
    if ref.pod_regex is not None or ref.is_deployment:
        return False
    return ref.inference_pool is not None or serving_pod_regex(ref.kind, ref.name) is None


def _pod_regex(
    ref: WorkloadRef, pods: Sequence[PoolPod] | None, others: Sequence[PoolPod] | None
) -> str | None:
    """The side's podRegex; for a StatefulSet or a LeaderWorkerSet without one, its serving Pods'
    names (a LeaderWorkerSet's leaders); for an InferencePool or another workload, its Pods' as
    listed (never matching one of `others`, the other side's). None: the default for a Deployment
    (its own Pods' names)."""
    if not lists_pods(ref):
        return ref.pod_regex or (None if ref.is_deployment else serving_pod_regex(ref.kind, ref.name))
    return pool_pod_regex(ref.name, pods, {pod.name for pod in others or ()}, kind=ref.kind)


def _role_context(
    ctx: QueryContext,
    spec: ModelRolloutSpec,
    role: str | None,
    member_pods: Mapping[tuple[Side, str], Sequence[str]],
) -> QueryContext:
    """The context of a metric naming a role: each side's Pods are that role's member's."""
    if role is None:
        return ctx

    def regex(side: Side, ref: WorkloadRef) -> str:
        member = next(member for member in ref.members or () if member.role == role)
        if member.pod_regex is not None:
            return member.pod_regex
        if member.kind == "Deployment":
            return default_pod_regex(member.name)
        return named_pods_regex(f"{member.kind}_{member.name}", member_pods.get((side, role), ()))

    return replace(
        ctx,
        incumbent_pod_regex=regex("incumbent", spec.incumbent),
        candidate_pod_regex=regex("candidate", spec.candidate),
    )


def _pickers(spec: ModelRolloutSpec, found: Mapping[Side, str | None] | None) -> tuple[str, str]:
    """Each side's endpoint picker Service: "" for a Deployment side, and for every side when the
    pools were not looked up (a replay or a plan without the cluster: by namespace and model only).
    A pool without one gets a name no Service can have (they are lowercase), which says why in the
    query: its requests cannot be told from another pool's."""
    if found is None:
        return "", ""

    def picker(ref: WorkloadRef, side: Side) -> str:
        if ref.inference_pool is None:
            return ""
        return found.get(side) or f"InferencePool {ref.inference_pool} names no endpointPickerRef Service"

    return picker(spec.incumbent, "incumbent"), picker(spec.candidate, "candidate")


def _metric_plan(index: int, metric: MetricSpec, source: str, ctx: QueryContext) -> MetricPlan:
    def query(side: Side) -> str:
        if metric.preset is not None:
            return preset_query(
                metric.preset, source, ctx, side, threshold=metric.threshold, goodput=metric.goodput
            )
        return render_query(metric.query or "", ctx, side)

    try:
        candidate = query("candidate")
    except ValueError as error:  # an unknown preset, a template that does not render
        field = "query" if metric.preset is None else "source" if metric.source is not None else "preset"
        raise ValueError(f"spec.analysis.metrics[{index}].{field} (metric {metric.name}): {error}") from None
    totals = _totals(metric, source, ctx) if metric.counts_events else None
    exemplars: str | None = None
    series: tuple[SeriesProbe, ...] = ()
    if metric.preset is not None:
        exemplars = exemplar_query(
            metric.preset, source, ctx, threshold=metric.threshold, goodput=metric.goodput
        )
        series = series_probes(metric.preset, source, ctx, threshold=metric.threshold)
    incumbent = query("incumbent")
    drawn = incumbent if incumbent != candidate else None
    per_accelerator = metric.preset in PER_ACCELERATOR_PRESETS
    buckets = _buckets(metric, source, ctx) if metric.bounds_quantile else None
    return MetricPlan(
        candidate,
        incumbent if metric.compare else None,
        totals,
        exemplars,
        series,
        drawn,
        per_accelerator,
        buckets,
    )


def _totals(metric: MetricSpec, source: str, ctx: QueryContext) -> tuple[CountQueries, CountQueries]:
    assert metric.preset is not None
    candidate = count_queries(metric.preset, source, ctx, "candidate", threshold=metric.threshold)
    incumbent = count_queries(metric.preset, source, ctx, "incumbent", threshold=metric.threshold)
    assert candidate is not None and incumbent is not None, "the API allows counting on rate presets only"
    return candidate, incumbent


def _buckets(metric: MetricSpec, source: str, ctx: QueryContext) -> tuple[BucketQueries, BucketQueries]:
    assert metric.preset is not None
    candidate = bucket_queries(metric.preset, source, ctx, "candidate")
    incumbent = bucket_queries(metric.preset, source, ctx, "incumbent")
    assert candidate is not None and incumbent is not None, (
        "the API allows confidence on latency presets only"
    )
    return candidate, incumbent
