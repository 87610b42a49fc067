"""Named PromQL queries for the metrics most rollouts gate on.

Each preset selects one Deployment's series with `namespace="<ns>",pod=~"<podRegex>"` (the labels
Prometheus's Kubernetes discovery sets) over the context's range window, and returns one value.
Metric names follow vLLM:

- `http_requests_total{status}`: vLLM's HTTP instrumentation. `status` is the HTTP code as a string
  ("503") or, with grouped codes, its class ("5xx"); `5..` matches both.
- `vllm:e2e_request_latency_seconds`: vLLM's end-to-end request latency histogram.
- `llm_refusals_total`: no inference server exports this by itself. A gateway, a sidecar or the
  server must count refused requests under this name, and should export it at 0 from the start:
  while the series is absent, `refusalRate` is empty, which the engine treats as Inconclusive.

Empty results and NaN (e.g. 0/0 when no requests arrived) are meaningful: they mean "no data", and
the presets keep them rather than turning them into 0, so missing data can never look healthy.
The one exception is the 5xx numerator of `errorRate`: that series only exists after the first
error, so a healthy candidate would otherwise never produce a value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from modelgate.metrics.base import CountQueries
from modelgate.metrics.context import QueryContext, Side

# Builders take a label selector body (`namespace="ns",pod=~"re"`) and a range window ("1m").
QueryBuilder = Callable[[str, str], str]


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    unit: str
    build: QueryBuilder


class UnknownPresetError(ValueError):
    """A metric names a preset that does not exist."""


def _error_rate(selector: str, window: str) -> str:
    # `or vector(0)`: no 5xx series yet means no errors; a missing denominator still means no data.
    errors = f'sum(rate(http_requests_total{{{selector},status=~"5.."}}[{window}]))'
    total = f"sum(rate(http_requests_total{{{selector}}}[{window}]))"
    return f"({errors} or vector(0)) / {total}"


def _latency_p99(selector: str, window: str) -> str:
    buckets = f"rate(vllm:e2e_request_latency_seconds_bucket{{{selector}}}[{window}])"
    return f"histogram_quantile(0.99, sum by (le) ({buckets}))"


def _refusal_rate(selector: str, window: str) -> str:
    refusals = f"sum(rate(llm_refusals_total{{{selector}}}[{window}]))"
    total = f"sum(rate(http_requests_total{{{selector}}}[{window}]))"
    return f"{refusals} / {total}"


PRESETS: Mapping[str, Preset] = MappingProxyType(
    {
        preset.name: preset
        for preset in (
            Preset("errorRate", "share of requests answered with HTTP 5xx", "ratio", _error_rate),
            Preset("latencyP99", "99th percentile of end-to-end request latency", "seconds", _latency_p99),
            Preset("refusalRate", "share of requests the model refused", "ratio", _refusal_rate),
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


def selector(ctx: QueryContext, side: Side) -> str:
    """The label selector body for one side's series."""
    return f'namespace="{ctx.namespace}",pod=~"{ctx.pod_regex(side)}"'


def preset_query(name: str, ctx: QueryContext, side: Side = "candidate") -> str:
    """PromQL for a preset over the candidate's series, or the incumbent's for comparisons."""
    return get_preset(name).build(selector(ctx, side), ctx.interval)


def request_count_query(ctx: QueryContext, side: Side = "candidate") -> str:
    """Requests one side served in the window; the engine compares it with `minRequests`."""
    return f"sum(increase(http_requests_total{{{selector(ctx, side)}}}[{ctx.interval}]))"


def count_queries(name: str, ctx: QueryContext, side: Side, window: str) -> CountQueries | None:
    """For the sequential test: one side's requests and events over `window`; None for presets that
    do not count requests."""
    sel = selector(ctx, side)
    requests = f"sum(increase(http_requests_total{{{sel}}}[{window}]))"
    if name == "errorRate":
        events = f'sum(increase(http_requests_total{{{sel},status=~"5.."}}[{window}])) or vector(0)'
    elif name == "refusalRate":
        events = f"sum(increase(llm_refusals_total{{{sel}}}[{window}]))"
    else:
        return None
    return CountQueries(requests=requests, events=events)
