"""The presets, each built from a stack's series (`common.Stack`): shares of requests, latency
quantiles, throughput and queue depth. A preset whose series a stack lacks does not exist for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from modelgate.api.goodput_targets import GoodputTargets
from modelgate.metrics.context import QueryContext, Side
from modelgate.metrics.presets import goodput
from modelgate.metrics.presets.common import Counter, Histogram, Selector, Stack, by_pod, counter
from modelgate.metrics.provider import CountQueries

# No server exports refusals by itself: the refusal proxy in the model's pod (docs/refusal-sidecar.md)
# counts its requests and refusals under these names, so every source reads them by pod.
# Absent means "nobody counts refusals", which stays no data.
PROXIED_REQUESTS = counter("llm_requests_total")
REFUSALS = counter("llm_refusals_total")


class UnknownPresetError(ValueError):
    """A preset that does not exist, or not for the chosen source."""


@dataclass(frozen=True)
class Share:
    """Events among a stack's requests, both counted the same way (rates, or totals)."""

    requests: Counter
    events: Counter
    select: Selector | None = None  # when both are selected otherwise than the stack's own series
    complement: bool = False  # the events are the requests that `events` does not count

    def rates(self, stack: Stack, ctx: QueryContext, side: Side, window: str) -> CountQueries:
        """Requests and events per second over `window`."""
        return self._counted(lambda c, selector: c.over("rate", selector, window), stack, ctx, side)

    def totals(self, stack: Stack, ctx: QueryContext, side: Side) -> CountQueries:
        """Requests and events so far: the counters' totals."""
        return self._counted(lambda c, selector: c.total(selector), stack, ctx, side)

    def _counted(
        self, count: Callable[[Counter, str], str], stack: Stack, ctx: QueryContext, side: Side
    ) -> CountQueries:
        selector = (self.select or stack.select)(ctx, side)
        requests, events = count(self.requests, selector), count(self.events, selector)
        if self.complement:
            events = f"({requests} - {events})"
        return CountQueries(requests=requests, events=events)


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    unit: str
    # The stack's share for a rate preset (None when the stack lacks it), given the threshold.
    share: Callable[[Stack, float | None], Share | None] | None = None
    # The query of any other preset: (stack, selector, window) -> PromQL, None when the stack lacks it.
    query: Callable[[Stack, str, str], str | None] | None = None
    # The query of a preset built from a side's own numbers (its accelerators, their price) and the
    # metric's goodput targets: (stack, context, side, targets) -> PromQL, None when the stack lacks it.
    per_side: Callable[[Stack, QueryContext, Side, GoodputTargets | None], str | None] | None = None
    # What that query reads of the stack (histograms, counters, a gauge's name).
    reads: (
        Callable[[Stack], Histogram | Counter | str | tuple[Histogram | Counter | None, ...] | None] | None
    ) = None

    def series(self, stack: Stack, threshold: float | None) -> tuple[str, ...]:
        """The names of the series the preset reads whose absence leaves it without data."""
        if self.share is not None:
            share = self.share(stack, threshold)
            return () if share is None else (*share.requests.series(), *share.events.series())
        read = self.reads(stack) if self.reads is not None else None
        if read is None:
            return ()
        if isinstance(read, tuple):
            return tuple(name for part in read if part is not None for name in part.series())
        return (read,) if isinstance(read, str) else read.series()


def _quantile(
    q: float, histogram: Callable[[Stack], Histogram | None]
) -> Callable[[Stack, str, str], str | None]:
    def build(stack: Stack, selector: str, window: str) -> str | None:
        found = histogram(stack)
        return found.quantile(q, selector, window) if found is not None else None

    return build


def _share_of(events: Callable[[Stack], Counter | None]) -> Callable[[Stack, float | None], Share | None]:
    def build(stack: Stack, _: float | None) -> Share | None:
        found = events(stack)
        return Share(stack.requests, found) if found is not None else None

    return build


def _slow_requests(stack: Stack, threshold: float | None) -> Share | None:
    if stack.latency is None:
        return None
    if threshold is None:
        raise ValueError("slowRequestRate needs a threshold: a bucket bound in seconds")
    observed, within = stack.latency.above(threshold)
    return Share(observed, within, complement=True)


def _ttft(stack: Stack) -> Histogram | None:
    return stack.ttft


def _tpot(stack: Stack) -> Histogram | None:
    return stack.tpot


def _latency(stack: Stack) -> Histogram | None:
    return stack.latency


def _tokens(stack: Stack) -> Counter | None:
    return stack.generated_tokens


def _queue(stack: Stack) -> str | None:
    return stack.queue


def _tokens_per_second(stack: Stack, selector: str, window: str) -> str | None:
    tokens = stack.generated_tokens
    return tokens.over("rate", selector, window) if tokens is not None else None


def _goodput_reads(stack: Stack) -> tuple[Histogram | Counter | None, ...]:
    return (stack.ttft, stack.tpot)


def _cost_reads(stack: Stack) -> tuple[Histogram | Counter | None, ...]:
    return (stack.generated_tokens, stack.ttft or stack.requests)


def _goodput_tokens_reads(stack: Stack) -> tuple[Histogram | Counter | None, ...]:
    return (stack.ttft, stack.tpot, stack.generated_tokens)


def _with_targets(
    build: Callable[[Stack, QueryContext, Side, GoodputTargets], str | None],
) -> Callable[[Stack, QueryContext, Side, GoodputTargets | None], str | None]:
    def checked(stack: Stack, ctx: QueryContext, side: Side, targets: GoodputTargets | None) -> str | None:
        if targets is None:
            raise ValueError("a goodput preset needs goodput: the ttft and tpot targets in seconds")
        return build(stack, ctx, side, targets)

    return checked


def _queue_depth(stack: Stack, selector: str, window: str) -> str | None:
    # The window's mean queue of the side's busiest pod: one sample is too noisy to judge by.
    return f"max(avg_over_time({stack.queue}{{{selector}}}[{window}]))" if stack.queue else None


PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        preset.name: preset
        for preset in (
            Preset(
                "errorRate",
                "share of requests that failed on the server's side",
                "ratio",
                share=_share_of(lambda stack: stack.errors),
            ),
            Preset(
                "abortRate",
                "share of requests cancelled before they finished (the client went away)",
                "ratio",
                share=_share_of(lambda stack: stack.aborts),
            ),
            Preset(
                "refusalRate",
                "share of requests the model refused, as modelgate's refusal proxy counts them",
                "ratio",
                share=lambda stack, _: Share(PROXIED_REQUESTS, REFUSALS, select=by_pod),
            ),
            Preset(
                "slowRequestRate",
                "share of answered requests slower than `threshold` seconds end to end",
                "ratio",
                share=_slow_requests,
            ),
            Preset(
                "ttftP50",
                "median time to first token",
                "seconds",
                query=_quantile(0.5, _ttft),
                reads=_ttft,
            ),
            Preset(
                "ttftP99",
                "99th percentile of time to first token",
                "seconds",
                query=_quantile(0.99, _ttft),
                reads=_ttft,
            ),
            Preset(
                "tpotP99",
                "99th percentile of time per output token (inter-token latency)",
                "seconds",
                query=_quantile(0.99, _tpot),
                reads=_tpot,
            ),
            Preset(
                "latencyP99",
                "99th percentile of end-to-end request latency",
                "seconds",
                query=_quantile(0.99, _latency),
                reads=_latency,
            ),
            Preset(
                "tokensPerSecond",
                "output tokens generated per second",
                "tokens/s",
                query=_tokens_per_second,
                reads=_tokens,
            ),
            Preset(
                "queueDepth",
                "requests waiting in the server's queue",
                "requests",
                query=_queue_depth,
                reads=_queue,
            ),
            Preset(
                "goodputPerAccelerator",
                "requests per second per accelerator that met the `goodput` targets (at least), at both "
                "sides' traffic",
                "requests/s",
                per_side=_with_targets(goodput.goodput_per_accelerator),
                reads=_goodput_reads,
            ),
            Preset(
                "goodputTokensPerAccelerator",
                "goodputPerAccelerator times the side's output tokens per request",
                "tokens/s",
                per_side=_with_targets(goodput.goodput_tokens_per_accelerator),
                reads=_goodput_tokens_reads,
            ),
            Preset(
                "costPerMillionTokens",
                "the price of a million output tokens on the side's accelerators, at both sides' traffic",
                "price",
                per_side=lambda stack, ctx, side, _: goodput.cost_per_million_tokens(stack, ctx, side),
                reads=_cost_reads,
            ),
        )
    }
)
