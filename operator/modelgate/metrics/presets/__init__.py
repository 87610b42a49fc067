"""Named PromQL queries over the series of a serving stack (the metric's `source`).

Named PromQL queries over the series of a serving stack (the metric's `source`): shares of
requests (errorRate, abortRate, refusalRate, slowRequestRate), latency quantiles (ttftP50, ttftP99,
tpotP99, latencyP99), tokensPerSecond and queueDepth. One module per stack names its series; the
presets (`catalog.py`) are built the same way from each. A stack that lacks a preset's series has
no such preset: asking for it raises UnknownPresetError, which fails the rollout.

The table of presets by source, the exact queries and where each name comes from: docs/presets.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import TypeVar

from modelgate.api.analysis import LATENCY_PRESETS
from modelgate.api.goodput_targets import GoodputTargets
from modelgate.api.series import SeriesComponent
from modelgate.metrics.context import QueryContext, Side
from modelgate.metrics.presets import goodput, istio_telemetry, llmd, sglang, tgi, traefik, triton, vllm
from modelgate.metrics.presets.catalog import (
    PRESETS,
    PROXIED_REQUESTS,
    REFUSALS,
    Preset,
    Share,
    UnknownPresetError,
)
from modelgate.metrics.presets.common import Histogram, Stack
from modelgate.metrics.provider import BucketQueries, CountQueries, SeriesProbe

T = TypeVar("T")

STACKS: Mapping[str, Stack] = MappingProxyType(
    {
        stack.source: stack
        for stack in (
            vllm.STACK,
            sglang.STACK,
            tgi.STACK,
            triton.STACK,
            llmd.STACK,
            istio_telemetry.STACK,
            traefik.STACK,
        )
    }
)


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownPresetError(
            f"unknown metric preset {name!r}; known presets: {', '.join(PRESETS)}"
        ) from None


def get_stack(source: str) -> Stack:
    try:
        return STACKS[source]
    except KeyError:
        raise UnknownPresetError(
            f"unknown metric source {source!r}; known sources: {', '.join(STACKS)}"
        ) from None


def available(source: str) -> tuple[str, ...]:
    """The presets that exist for a source."""
    lacks = get_stack(source).lacks
    return tuple(name for name in PRESETS if name not in lacks)


def preset_query(
    name: str,
    source: str,
    ctx: QueryContext,
    side: Side = "candidate",
    *,
    threshold: float | None = None,
    goodput: GoodputTargets | None = None,
) -> str:
    """One side's value of a preset (the candidate's, or the incumbent's for comparisons)."""
    preset, stack = _resolve(name, source, ctx)
    if preset.per_side is not None:
        built = preset.per_side(stack, ctx, side, goodput)
        assert built is not None, f"{source} lacks {name} without saying why"
        return built
    if preset.share is not None:
        rates = _share(preset, stack, threshold).rates(stack, ctx, side, ctx.interval)
        return f"{rates.events} / {rates.requests}"
    assert preset.query is not None
    query = preset.query(stack, stack.select(ctx, side), ctx.interval)
    assert query is not None, f"{source} lacks {name} without saying why"
    return query


def count_queries(
    name: str, source: str, ctx: QueryContext, side: Side, *, threshold: float | None = None
) -> CountQueries | None:
    """For the sequential test: one side's total requests and events, which it reads at each
    evaluation and subtracts; None for presets that do not count requests."""
    preset, stack = _resolve(name, source, ctx)
    if preset.share is None:
        return None
    return _share(preset, stack, threshold).totals(stack, ctx, side)


def bucket_queries(name: str, source: str, ctx: QueryContext, side: Side) -> BucketQueries | None:
    """For a quantile comparison with confidence: one side's histogram as totals per boundary; None
    for presets that are not a quantile of a histogram."""
    preset, stack = _resolve(name, source, ctx)
    histogram = preset.reads(stack) if name in LATENCY_PRESETS and preset.reads is not None else None
    if not isinstance(histogram, Histogram):
        return None
    return histogram.buckets(stack.select(ctx, side))


def exemplar_query(
    name: str,
    source: str,
    ctx: QueryContext,
    *,
    threshold: float | None = None,
    goodput: GoodputTargets | None = None,
) -> str:
    """The candidate's series whose exemplars point at the requests behind a preset's value: a
    share's events (the error counter of errorRate, ...), else the preset's own query (a latency
    histogram's buckets, whose exemplars carry each request's latency)."""
    preset, stack = _resolve(name, source, ctx)
    if preset.share is None:
        return preset_query(name, source, ctx, threshold=threshold, goodput=goodput)
    share = _share(preset, stack, threshold)
    if share.complement:
        # The events are what one bucket does not count (slowRequestRate): every bucket of the
        # histogram, whose exemplars carry each request's latency, the slowest ranked first.
        selector = (share.select or stack.select)(ctx, "candidate")
        return replace(share.events, matchers="").total(selector)
    return share.totals(stack, ctx, "candidate").events


def series_probes(
    name: str, source: str, ctx: QueryContext, *, threshold: float | None = None
) -> tuple[SeriesProbe, ...]:
    """For each series the preset reads: who exports it, and a query per side that counts its series
    (empty when there are none), to say which is missing when the preset has no data."""
    preset, stack = _resolve(name, source, ctx)
    share = preset.share(stack, threshold) if preset.share is not None else None
    select = (share.select if share is not None else None) or stack.select
    sides: tuple[Side, ...] = ("candidate", "incumbent")
    return tuple(
        SeriesProbe(
            series,
            _exporter(stack, series),
            tuple((side, f"count({series}{{{select(ctx, side)}}})") for side in sides),
        )
        for series in dict.fromkeys(preset.series(stack, threshold))
    )


def _exporter(stack: Stack, series: str) -> SeriesComponent:
    if series in (*PROXIED_REQUESTS.names, *REFUSALS.names):
        return SeriesComponent.REFUSAL_SIDECAR  # every source reads refusals from the sidecar
    return stack.exporter_of(series)


def request_count_query(source: str, ctx: QueryContext, side: Side = "candidate") -> str:
    """Requests one side served in the window; the engine compares it with `minRequests`."""
    stack = _sides_told_apart(get_stack(source), ctx)
    selector = stack.select(ctx, side)
    requests = stack.requests.over("increase", selector, ctx.interval)
    if stack.answered is None:
        return requests
    return f"({requests} or {stack.answered.over('increase', selector, ctx.interval)})"


def output_tokens_query(source: str, ctx: QueryContext, side: Side) -> str | None:
    """The output tokens one side generated in the window, for status.cost; None for a source that
    does not count them, or that cannot tell the sides apart (two adapters: the metrics say why)."""
    try:
        stack = _sides_told_apart(get_stack(source), ctx)
    except UnknownPresetError:
        return None
    return goodput.output_tokens(stack, ctx, side)


def _resolve(name: str, source: str, ctx: QueryContext) -> tuple[Preset, Stack]:
    preset, stack = get_preset(name), _sides_told_apart(get_stack(source), ctx)
    if name in stack.lacks:
        raise UnknownPresetError(
            f"preset {name} does not exist for source {source}: {stack.lacks[name]}; "
            f"presets for {source}: {', '.join(available(source))}"
        )
    return preset, stack


def _sides_told_apart(stack: Stack, ctx: QueryContext) -> Stack:
    """Two adapters of one pool are served by the same Pods, and a server labels a LoRA request's
    series with its base model's name (vLLM's and its simulator's `model_name`), never the adapter's:
    only a source whose series name the model each request was routed to can tell them apart."""
    if ctx.adapters and not stack.by_model:
        by_model = ", ".join(source for source, known in STACKS.items() if known.by_model)
        raise UnknownPresetError(
            f"source {stack.source} cannot tell two adapters of one InferencePool apart: their requests "
            f"are served by the same Pods, under the base model's name; use source {by_model}"
        )
    return stack


def _share(preset: Preset, stack: Stack, threshold: float | None) -> Share:
    assert preset.share is not None
    share = preset.share(stack, threshold)
    assert share is not None, f"{stack.source} lacks {preset.name} without saying why"
    return share


__all__ = [
    "PRESETS",
    "STACKS",
    "Preset",
    "Stack",
    "UnknownPresetError",
    "available",
    "bucket_queries",
    "count_queries",
    "exemplar_query",
    "get_preset",
    "get_stack",
    "output_tokens_query",
    "preset_query",
    "request_count_query",
    "series_probes",
]
