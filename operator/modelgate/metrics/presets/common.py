"""What every source's presets are made of: how a stack's series are selected, its counters,
histograms and gauges, and the PromQL shapes built from them.

A stack (`Stack`) names its series; the presets (`catalog.py`) turn them into queries. A stack that
has no series for a preset says why in `Stack.lacks`, and the preset does not exist for it.

No data stays no data: empty results and NaN (0/0 when no requests arrived) are kept, never turned
into 0, so missing data cannot look healthy. The one exception is a numerator whose series only
appears with the first event (`Counter.absent_means_zero`): a healthy candidate would otherwise
never get a value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal

from modelgate.api.series import SeriesComponent
from modelgate.metrics.context import QueryContext, Side
from modelgate.metrics.provider import BucketQueries

# A side's label selector body, e.g. `namespace="serving",pod=~"chat-v2-[a-z0-9]+-[a-z0-9]+"`.
Selector = Callable[[QueryContext, Side], str]


def by_pod(ctx: QueryContext, side: Side) -> str:
    """Series scraped from the side's own pods (the labels Kubernetes discovery sets)."""
    return f'namespace="{ctx.namespace}",pod=~"{ctx.pod_regex(side)}"'


def _matchers(*parts: str) -> str:
    return ",".join(part for part in parts if part)


@dataclass(frozen=True)
class Counter:
    """The sum of one or more counters, each narrowed by `matchers` (e.g. `status=~"5.."`)."""

    names: tuple[str, ...]
    matchers: str = ""
    # The series appears with the first event (a 5xx, an abort), so its absence means none yet.
    absent_means_zero: bool = False
    # Other matchers for the same events, where servers label them differently (vLLM's
    # `finished_reason`, its simulator's `finish_reason`): every series either selects is counted.
    alternatives: tuple[str, ...] = ()

    def over(self, function: str, selector: str, window: str) -> str:
        """`sum(<function>(name{selector}[window]))` for each name, added up."""
        return self._added(lambda series: f"{function}({series}[{window}])", selector)

    def total(self, selector: str) -> str:
        """`sum(name{selector})` for each name, added up: the counters' values as last scraped, with
        neither extrapolation nor a window whose edges could lose or repeat an increment."""
        return self._added(lambda series: series, selector)

    def grown(self, selector: str, window: str) -> str:
        """What the counters' total grew by over `window`: their sum now less their sum `window` ago
        (0 when no series existed then: counters start at 0), the difference of two readings, with
        neither extrapolation nor interpolation."""
        before = self._added(lambda series: f"{series} offset {window}", selector)
        return f"({self.total(selector)} - ({before} or vector(0)))"

    def _added(self, term: Callable[[str], str], selector: str) -> str:
        terms = [f"sum({self._either(term, name, selector)})" for name in self.names]
        added = " + ".join(terms)
        if self.absent_means_zero:
            return f"({added} or vector(0))"
        return added if len(terms) == 1 else f"({added})"

    def series(self) -> tuple[str, ...]:
        """The names whose absence means no data rather than no events."""
        return () if self.absent_means_zero else self.names

    def _either(self, term: Callable[[str], str], name: str, selector: str) -> str:
        matcher_sets = (self.matchers, *self.alternatives)
        return " or ".join(term(f"{name}{{{_matchers(selector, matchers)}}}") for matchers in matcher_sets)


def counter(
    name: str, matchers: str = "", *, absent_means_zero: bool = False, alternatives: tuple[str, ...] = ()
) -> Counter:
    return Counter((name,), matchers, absent_means_zero, alternatives)


@dataclass(frozen=True)
class Histogram:
    """A classic histogram (`<name>_bucket{le}`, `<name>_count`) of durations in `unit` seconds."""

    name: str
    unit: float = 1.0  # 0.001 for milliseconds
    # Its bucket bounds in seconds where the server's are known; else every bound servers use.
    grid: tuple[Decimal, ...] | None = None

    def quantile(self, q: float, selector: str, window: str) -> str:
        buckets = f"rate({self.name}_bucket{{{selector}}}[{window}])"
        quantile = f"histogram_quantile({q}, sum by (le) ({buckets}))"
        return quantile if self.unit == 1.0 else f"{quantile} * {self.unit:g}"

    def series(self) -> tuple[str, ...]:
        return (f"{self.name}_bucket",)

    def within(self, seconds: float, selector: str, window: str) -> str:
        """Observations per second over `window` that were at most `seconds`, from the bucket of the
        largest bound at most `seconds` (`le` is a label, so the candidates are the bounds servers
        use, `BUCKET_BOUNDS`, and `seconds` itself): the buckets are cumulative, so the largest of
        their rates is that bucket's. Rounding down counts fewer observations as within."""
        unit = Decimal(repr(self.unit))
        limit = Decimal(repr(seconds))
        bounds = sorted({bound / unit for bound in (limit, *BUCKET_BOUNDS) if bound <= limit})
        le = 'le=~"' + "|".join(le_matcher(bound) for bound in bounds) + '"'
        buckets = f"rate({self.name}_bucket{{{_matchers(selector, le)}}}[{window}])"
        return f"max(sum by (le) ({buckets}))"

    def buckets(self, selector: str) -> BucketQueries:
        """Each boundary's cumulative count, and the +Inf bucket's, as totals (sums over the side's
        series, no window): a quantile comparison with confidence counts what they grew by."""
        unit = Decimal(repr(self.unit))

        def count(le: str) -> str:
            return f"sum({self.name}_bucket{{{_matchers(selector, le)}}})"

        grid = self.grid or LATENCY_GRID
        within = tuple((float(bound), count(f'le=~"{le_matcher(bound / unit)}"')) for bound in grid)
        return BucketQueries(count('le="+Inf"'), within)

    def observations(self) -> Counter:
        return counter(f"{self.name}_count")

    def above(self, seconds: float) -> tuple[Counter, Counter]:
        """(all observations, those within `seconds`): the bucket whose bound is the threshold."""
        bound = le_matcher(Decimal(repr(seconds)) / Decimal(repr(self.unit)))
        return self.observations(), counter(f"{self.name}_bucket", f'le=~"{bound}"')


@dataclass(frozen=True)
class Stack:
    """One serving stack's series, who exports them, and what it lacks (preset -> why)."""

    source: str
    select: Selector
    exporter: SeriesComponent  # of its series, but those `exporters` names
    requests: Counter
    # Requests the server answered, counted against `minRequests` where `requests` is not exported
    # (a server without its HTTP counter); never a share's denominator, whose failures it misses.
    answered: Counter | None = None
    errors: Counter | None = None
    aborts: Counter | None = None
    ttft: Histogram | None = None
    tpot: Histogram | None = None
    latency: Histogram | None = None
    generated_tokens: Counter | None = None
    queue: str | None = None  # a gauge
    lacks: Mapping[str, str] = field(default_factory=dict)
    exporters: Mapping[str, SeriesComponent] = field(default_factory=dict)
    # Its series are selected by the model each request was routed to (an adapter), not by Pod.
    by_model: bool = False

    def exporter_of(self, series: str) -> SeriesComponent:
        return self.exporters.get(series, self.exporter)


# Bucket bounds in the servers' default histograms (vLLM's and its simulator's TTFT and time per output
# token, Prometheus clients' defaults): those a target is rounded down to.
BUCKET_BOUNDS = tuple(
    Decimal(bound)
    for bound in [
        "0.001",
        "0.0025",
        "0.005",
        "0.01",
        "0.02",
        "0.025",
        "0.04",
        "0.05",
        "0.06",
        "0.075",
        "0.08",
        "0.1",
        "0.15",
        "0.2",
        "0.25",
        "0.3",
        "0.4",
        "0.5",
        "0.75",
        "1",
        "2",
        "2.5",
        "5",
        "7.5",
        "10",
        "20",
        "40",
        "80",
        "160",
        "640",
        "2560",
    ]
)


def bucket_grid(bounds: str) -> tuple[Decimal, ...]:
    """Bucket bounds in seconds, written as a server's source spells them."""
    return tuple(Decimal(bound) for bound in bounds.split())


# vLLM's end-to-end latency buckets beyond those (its simulator's too).
VLLM_LATENCY_GRID = bucket_grid("0.3 0.5 0.8 1 1.5 2 2.5 5 10 15 20 30 40 50 60 120 240 480 960 1920 7680")
# The boundaries a quantile comparison with confidence reads of a histogram whose grid is not known:
# every bound servers use by default (those a server lacks have no series, and are left out).
LATENCY_GRID = tuple(sorted({*BUCKET_BOUNDS, *VLLM_LATENCY_GRID}))

# What a proxy or gateway cannot see of a request: the server's tokens and queue.
SERVER_ONLY = (
    "ttftP50",
    "ttftP99",
    "tpotP99",
    "tokensPerSecond",
    "queueDepth",
    "goodputPerAccelerator",
    "goodputTokensPerAccelerator",
    "costPerMillionTokens",
)


def lacks_server_only(why: str) -> Mapping[str, str]:
    """The `lacks` of a stack that counts requests in a proxy or gateway."""
    return dict.fromkeys(SERVER_ONLY, why)


def le_matcher(bound: Decimal) -> str:
    """A regex matching the `le` label of the bucket with upper bound `bound`, as clients spell it:
    Python's client writes `1.0` and `0.5`, Go's `1` and `1e+06`. Dots and pluses are escaped."""
    spellings = dict.fromkeys((_python_float(bound), _go_float(bound)))
    return "|".join(s.replace(".", "\\\\.").replace("+", "\\\\+") for s in spellings)


def _python_float(value: Decimal) -> str:
    return repr(float(value))


def _go_float(value: Decimal) -> str:
    """strconv.FormatFloat(value, 'g', -1, 64), as Go's client writes bounds: the shortest digits,
    with an exponent below 1e-4 and from 1e+06."""
    text = repr(float(value))
    sign, digits, exponent = Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    mantissa = "".join(map(str, digits))
    decimal_exponent = len(digits) + exponent - 1
    if decimal_exponent < -4 or decimal_exponent >= 6:
        head, tail = mantissa[0], mantissa[1:]
        number = f"{head}.{tail}" if tail else head
        return f"{'-' if sign else ''}{number}e{decimal_exponent:+03d}"
    return format(Decimal(text).normalize(), "f")
