"""Goodput per accelerator and cost per million output tokens, each side's own: built from its
histograms and token counter, its accelerators and their price (docs/metric-presets.md#goodput-and-cost).

Histograms give each target's share on its own, never the requests that met both. With A the
requests per second whose time to first token was within its target and L the time-per-token
observations per second above theirs, the requests that met both are at least A - L: each late
observation belongs to one request at most, so at most L requests missed the time-per-token target
(for a per-request histogram this is the Frechet bound A + B - N; for a per-token one, where a
request counts as late when any of its tokens is, it still holds, more loosely)."""

from __future__ import annotations

from modelgate.api.analysis import GoodputTargets
from modelgate.api.duration import parse_duration
from modelgate.metrics.context import QueryContext, Side, promql_number
from modelgate.metrics.presets.common import Stack

SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = "1e6"


def good_requests(stack: Stack, selector: str, window: str, targets: GoodputTargets) -> str | None:
    """Requests per second that met both targets, at least: max(0, A - L)."""
    if stack.ttft is None or stack.tpot is None:
        return None
    met_ttft = stack.ttft.within(targets.ttft, selector, window)
    tpot = stack.tpot
    observed = tpot.observations().over("rate", selector, window)
    late = f"({observed} - {tpot.within(targets.tpot, selector, window)})"
    return f"clamp_min({met_ttft} - {late}, 0)"


def goodput_per_accelerator(
    stack: Stack, ctx: QueryContext, side: Side, targets: GoodputTargets
) -> str | None:
    good = good_requests(stack, stack.select(ctx, side), ctx.interval, targets)
    return None if good is None else f"{good} / {promql_number(ctx.accelerators(side))}"


def goodput_tokens_per_accelerator(
    stack: Stack, ctx: QueryContext, side: Side, targets: GoodputTargets
) -> str | None:
    """The side's output tokens per second times the share of its requests that met both targets,
    per accelerator: as if the requests that met them were as long as those that did not."""
    selector, window = stack.select(ctx, side), ctx.interval
    good = good_requests(stack, selector, window, targets)
    if good is None or stack.ttft is None or stack.generated_tokens is None:
        return None
    requests = stack.ttft.observations().over("rate", selector, window)
    tokens = stack.generated_tokens.over("rate", selector, window)
    return f"{good} / {requests} * {tokens} / {promql_number(ctx.accelerators(side))}"


def cost_per_million_tokens(stack: Stack, ctx: QueryContext, side: Side) -> str | None:
    """accelerators x price per hour x the window in hours / (output tokens in the window / 1e6); the
    tokens are what the counters' total grew by over the window, and none (not a division by 0 or
    less) when it did not grow."""
    price = ctx.price(side)
    if stack.generated_tokens is None:
        return None
    if price is None:
        raise ValueError(f"costPerMillionTokens needs spec.analysis.accelerators.{side}.pricePerHour")
    tokens = stack.generated_tokens.grown(stack.select(ctx, side), ctx.interval)
    hours = f"{_seconds(ctx.interval)} / {SECONDS_PER_HOUR}"
    accelerators = promql_number(ctx.accelerators(side))
    return f"{accelerators} * {promql_number(price)} * {hours} / (({tokens} > 0) / {TOKENS_PER_MILLION})"


def _seconds(window: str) -> str:
    return f"{parse_duration(window).total_seconds():g}"
