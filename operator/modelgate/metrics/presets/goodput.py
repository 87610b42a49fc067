"""Goodput per accelerator and cost per million output tokens, each side's own.

Goodput per accelerator and cost per million output tokens, each side's own: built from its
histograms and token counter, its accelerators and their price (docs/metric-presets.md#goodput-and-cost).

Histograms give each target's share on its own, never the requests that met both. With A the
requests per second whose time to first token was within its target and L the time-per-token
observations per second above theirs, the requests that met both are at least A - L: each late
observation belongs to one request at most, so at most L requests missed the time-per-token target
(for a per-request histogram this is the Frechet bound A + B - N; for a per-token one, where a
request counts as late when any of its tokens is, it still holds, more loosely).

A canary splits the traffic unevenly, so goodput is taken at the same traffic for both sides: the
side's share of good requests times the requests both sides served, per accelerator of the side.
What the side would meet per accelerator if it took all the traffic; at 50% each, its own goodput
per accelerator times two."""

from __future__ import annotations

from modelgate.api.goodput_targets import GoodputTargets
from modelgate.core.results import SECONDS_PER_HOUR
from modelgate.metrics.context import QueryContext, Side, promql_number
from modelgate.metrics.presets.common import Stack

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
    """good / N x (N + the other side's N) / accelerators."""
    share = _good_share(stack, ctx, side, targets)
    if share is None:
        return None
    return f"{share} * {_served(stack, ctx)} / {promql_number(ctx.accelerators(side))}"


def goodput_tokens_per_accelerator(
    stack: Stack, ctx: QueryContext, side: Side, targets: GoodputTargets
) -> str | None:
    """goodputPerAccelerator times the side's output tokens per request: as if the requests that met
    the targets were as long as those that did not."""
    share = _good_share(stack, ctx, side, targets)
    if share is None or stack.ttft is None or stack.generated_tokens is None:
        return None
    selector, window = stack.select(ctx, side), ctx.interval
    requests = stack.ttft.observations().over("rate", selector, window)
    tokens = stack.generated_tokens.over("rate", selector, window)
    per_request = f"{tokens} / {requests}"
    return f"{share} * {per_request} * {_served(stack, ctx)} / {promql_number(ctx.accelerators(side))}"


def _good_share(stack: Stack, ctx: QueryContext, side: Side, targets: GoodputTargets) -> str | None:
    """The side's share of requests that met both targets, at least: max(0, A - L) / N."""
    selector = stack.select(ctx, side)
    good = good_requests(stack, selector, ctx.interval, targets)
    if good is None or stack.ttft is None:
        return None
    return f"{good} / {stack.ttft.observations().over('rate', selector, ctx.interval)}"


def _served(stack: Stack, ctx: QueryContext) -> str:
    """Requests per second both sides served (their time-to-first-token observations); a side with
    no series served none (the side judged has its own share, which has no data without them)."""
    assert stack.ttft is not None
    sides: tuple[Side, ...] = ("candidate", "incumbent")
    rates = (stack.ttft.observations().over("rate", stack.select(ctx, s), ctx.interval) for s in sides)
    return "(" + " + ".join(f"({rate} or vector(0))" for rate in rates) + ")"


def output_tokens(stack: Stack, ctx: QueryContext, side: Side) -> str | None:
    """What the side's output-token counters grew by over the window (a difference of two readings)."""
    if stack.generated_tokens is None:
        return None
    return stack.generated_tokens.grown(stack.select(ctx, side), ctx.interval)


def cost_per_million_tokens(stack: Stack, ctx: QueryContext, side: Side) -> str | None:
    """The side's spend per million output tokens at both sides' traffic: accelerators x price per
    second / (its output tokens per request x the requests per second both sides served / 1e6).
    Its own spend over the window (status.cost) depends on its share of the traffic: at a 10% step
    the candidate's accelerators idle and its tokens cost more. At the same traffic the two sides
    compare at every weight, and from the first window of a step. None where the tokens did not grow
    (not a division by zero)."""
    price = ctx.price(side)
    if stack.generated_tokens is None:
        return None
    if price is None:
        raise ValueError(f"costPerMillionTokens needs spec.analysis.accelerators.{side}.pricePerHour")
    selector, window = stack.select(ctx, side), ctx.interval
    per_request = (
        f"{stack.generated_tokens.over('rate', selector, window)} / {_requests(stack, selector, window)}"
    )
    sides: tuple[Side, ...] = ("candidate", "incumbent")
    served = " + ".join(f"({_requests(stack, stack.select(ctx, s), window)} or vector(0))" for s in sides)
    spend = f"{promql_number(ctx.accelerators(side))} * {promql_number(price)} / {SECONDS_PER_HOUR}"
    return f"{spend} / ((({per_request}) > 0) * ({served}) / {TOKENS_PER_MILLION})"


def _requests(stack: Stack, selector: str, window: str) -> str:
    """Requests per second that got a first token where the server counts them (llm-d's simulator
    exports no HTTP request counter), else its request counter."""
    counted = stack.requests if stack.ttft is None else stack.ttft.observations()
    return counted.over("rate", selector, window)
