"""ModelRollout.spec.analysis: where metrics come from, and how each judges the candidate.

ModelRollout.spec.analysis: where metrics come from, and how each one judges the candidate: fixed
bounds, a comparison with the incumbent in the same window, or a sequential test on counts."""

from datetime import timedelta
from types import MappingProxyType
from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from modelgate.api.accelerators import AcceleratorSpec
from modelgate.api.bounds import COUNT_MAX, LATENCY_MAX, MetricBound
from modelgate.api.duration import parse_duration
from modelgate.api.errors import FieldPathError
from modelgate.api.fields import (
    Boolean,
    HttpUrl,
    Integer,
    Interval,
    MetricName,
    Number,
    ObjectName,
    QueryTimeout,
    SecretKey,
)
from modelgate.api.goodput_targets import GoodputTargets
from modelgate.api.group_members import MemberRole
from modelgate.api.markers import CelRule, cel_rules, list_map
from modelgate.api.specmodel import SpecModel
from modelgate.api.statistical_tests import Comparison, SequentialTest, check_confidence, confidence_rules
from modelgate.api.unit_hints import Unit, refuse_text

# Shares of requests, in [0, 1]; the sequential test works on their counts.
RATE_PRESETS = ("errorRate", "abortRate", "refusalRate", "slowRequestRate")
# Seconds: a quantile of a latency histogram, and which.
LATENCY_QUANTILES = MappingProxyType({"ttftP50": 0.5, "ttftP99": 0.99, "tpotP99": 0.99, "latencyP99": 0.99})
LATENCY_PRESETS = tuple(LATENCY_QUANTILES)
# Requests (or output tokens) per second per accelerator that met the targets (`goodput`).
GOODPUT_PRESETS = ("goodputPerAccelerator", "goodputTokensPerAccelerator")
# Presets that read each side's accelerators (spec.analysis.accelerators).
PER_ACCELERATOR_PRESETS = (*GOODPUT_PRESETS, "costPerMillionTokens")
# Counts, rates per second and prices: never negative.
COUNT_PRESETS = ("tokensPerSecond", "queueDepth", *PER_ACCELERATOR_PRESETS)
MetricPreset = Literal[
    "errorRate",
    "abortRate",
    "refusalRate",
    "slowRequestRate",
    "ttftP50",
    "ttftP99",
    "tpotP99",
    "latencyP99",
    "tokensPerSecond",
    "queueDepth",
    "goodputPerAccelerator",
    "goodputTokensPerAccelerator",
    "costPerMillionTokens",
]
MetricSource = Literal["vllm", "sglang", "tgi", "triton", "llm-d", "istio", "traefik"]


# The API server refuses a bound written with its unit ("250ms") as not a number, without a hint.
_BOUND_UNITS = (
    "A number in the preset's unit: a share in [0, 1] for rates, seconds for latencies (0.25, not 250ms)."
)


def _cel_list(names: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{name}'" for name in names) + "]"


class SecretKeyRef(SpecModel):
    name: ObjectName = Field(description="Name of the Secret.")
    key: SecretKey = Field(description="Key within the Secret's data.")


class PrometheusSpec(SpecModel):
    address: HttpUrl = Field(
        description="Base URL of the Prometheus HTTP API, e.g. http://prometheus.monitoring:9090."
    )
    timeout: QueryTimeout = Field(
        "5s",
        description="Timeout of one query, as a Go-style duration; positive, at most 60s. The queries "
        "of one evaluation share a deadline of 60s as well.",
    )
    bearer_token_secret_ref: SecretKeyRef | None = Field(
        None, description="Secret key, in the ModelRollout's namespace, holding a bearer token."
    )

    @property
    def timeout_timedelta(self) -> timedelta:
        return parse_duration(self.timeout)


MAX_MIN_REQUESTS = 1_000_000_000


class MetricSpec(SpecModel):
    """One metric: a preset or a query, judged by fixed bounds (max, min), a comparison with the
    incumbent, a sequential test, or several of these."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "has(self.preset) != has(self.query)",
                message_expression="'metric ' + self.name + ': set exactly one of preset or query'",
            ),
            CelRule(
                "has(self.max) || has(self.min) || has(self.compare) || has(self.sequential)",
                message_expression="'metric ' + self.name + ': set max, min, compare or sequential'",
            ),
            CelRule(
                "!has(self.max) || !has(self.min) || self.min <= self.max",
                field_path=".min",
                message_expression="'metric ' + self.name + ': min must not be greater than max'",
            ),
            CelRule(
                f"!has(self.preset) || !(self.preset in {_cel_list(RATE_PRESETS)}) "
                "|| !has(self.max) || (self.max >= 0.0 && self.max <= 1.0)",
                field_path=".max",
                message_expression="'metric ' + self.name + ': ' + self.preset "
                "+ ' is a share of requests: max must be in [0, 1]'",
            ),
            CelRule(
                f"!has(self.preset) || !(self.preset in {_cel_list(RATE_PRESETS)}) "
                "|| !has(self.min) || (self.min >= 0.0 && self.min <= 1.0)",
                field_path=".min",
                message_expression="'metric ' + self.name + ': ' + self.preset "
                "+ ' is a share of requests: min must be in [0, 1]'",
            ),
            CelRule(
                f"!has(self.preset) || !(self.preset in {_cel_list(LATENCY_PRESETS)}) "
                "|| ((!has(self.max) || self.max > 0.0) && (!has(self.min) || self.min > 0.0))",
                field_path=".max",
                message_expression="'metric ' + self.name + ': ' + self.preset "
                "+ ' is a latency in seconds: max and min must be positive'",
            ),
            CelRule(
                f"!has(self.preset) || !(self.preset in {_cel_list(COUNT_PRESETS)}) || !has(self.max) "
                "|| self.max >= 0.0",
                field_path=".max",
                message_expression="'metric ' + self.name + ': ' + self.preset "
                "+ ' counts: max must not be negative'",
            ),
            CelRule(
                f"!has(self.preset) || !(self.preset in {_cel_list(COUNT_PRESETS)}) || !has(self.min) "
                "|| self.min >= 0.0",
                field_path=".min",
                message_expression="'metric ' + self.name + ': ' + self.preset "
                "+ ' counts: min must not be negative'",
            ),
            CelRule(
                f"!has(self.sequential) || (has(self.preset) && self.preset in {_cel_list(RATE_PRESETS)})",
                field_path=".sequential",
                message_expression="'metric ' + self.name + ': a sequential test needs a preset that counts "
                f"requests: one of {', '.join(RATE_PRESETS)}'",
            ),
            *confidence_rules(RATE_PRESETS, LATENCY_PRESETS, _cel_list),
            CelRule(
                "has(self.threshold) == (has(self.preset) && self.preset == 'slowRequestRate')",
                field_path=".threshold",
                message_expression="'metric ' + self.name + ': threshold is required by slowRequestRate and "
                "means nothing to other metrics'",
            ),
            CelRule(
                f"has(self.goodput) == (has(self.preset) && self.preset in {_cel_list(GOODPUT_PRESETS)})",
                field_path=".goodput",
                message_expression="'metric ' + self.name + ': goodput (the ttft and tpot targets) is "
                f"required by {' and '.join(GOODPUT_PRESETS)} and means nothing to other metrics'",
            ),
            CelRule(
                "!has(self.source) || has(self.preset)",
                field_path=".source",
                message_expression="'metric ' + self.name + ': source applies to presets only'",
            ),
        )
    )

    name: MetricName = Field(description="Name of the metric, shown in status and events (a DNS-1123 label).")
    preset: MetricPreset | None = Field(
        None,
        description="A built-in query over the source's metric names (docs/presets.md): errorRate, "
        "abortRate, refusalRate and slowRequestRate (shares of requests, in [0, 1]); ttftP50, ttftP99, "
        "tpotP99 and latencyP99 (seconds); tokensPerSecond; queueDepth; goodputPerAccelerator and "
        "goodputTokensPerAccelerator (requests or output tokens per second per accelerator that met "
        "`goodput`); costPerMillionTokens (the price of a million output tokens on the side's "
        "accelerators, spec.analysis.accelerators).",
    )
    source: MetricSource | None = Field(
        None,
        description="The serving stack whose metric names the preset reads; default: spec.analysis.source.",
    )
    role: MemberRole | None = Field(
        None,
        description="With grouped sides (spec.*.members): the role whose workloads' Pods the metric's "
        "per-pod series come from on each side (ttftP99 with role prefill: the prefill servers' time "
        "to first token). Absent: the side's Pods (or, for a gateway source, the gateway's series).",
    )
    threshold: Annotated[Number, Field(ge=0, le=LATENCY_MAX)] | None = Field(
        None,
        description="For slowRequestRate: the latency in seconds above which a request counts as slow; "
        "one of the source's histogram bucket bounds (docs/presets.md).",
    )
    goodput: GoodputTargets | None = Field(
        None,
        description="For goodputPerAccelerator and goodputTokensPerAccelerator: the time to first token "
        "and time per output token a request must meet to count.",
    )
    query: Annotated[str, StringConstraints(min_length=1, max_length=4096)] | None = Field(
        None,
        description="PromQL returning one number (one series). These variables are replaced by checked "
        "values: `{{ namespace }}`, `{{ incumbent.deployment }}`, `{{ candidate.deployment }}`, "
        "`{{ incumbent.podRegex }}`, `{{ candidate.podRegex }}`, `{{ target.deployment }}` and "
        "`{{ target.podRegex }}` (the side being evaluated: the candidate, or the incumbent for compare), "
        "and `{{ interval }}` (the query window).",
    )
    max: MetricBound | None = Field(
        None, description=f"The metric fails when its value is above this. {_BOUND_UNITS}"
    )
    min: MetricBound | None = Field(
        None, description=f"The metric fails when its value is below this. {_BOUND_UNITS}"
    )
    compare: Comparison | None = Field(
        None,
        description="Judge the candidate against the incumbent, both queried at the same time; too little "
        "data on either side is Inconclusive.",
    )
    sequential: SequentialTest | None = Field(
        None,
        description="An anytime-valid confidence sequence for the candidate's rate over the incumbent's "
        "(rate presets): Fail above tolerance, and with a margin, Pass only below it.",
    )
    failure_limit: Annotated[Integer, Field(ge=0, le=COUNT_MAX)] = Field(
        0, description="Fail verdicts tolerated (see failureLimitScope); one more rolls back."
    )
    failure_limit_scope: Literal["rollout", "step"] = Field(
        "rollout", description="Count Fail verdicts over the whole rollout, or afresh in each step."
    )
    dry_run: Boolean = Field(
        False, description="Evaluate and show the metric, but never fail the rollout or hold a step on it."
    )

    @model_validator(mode="before")
    @classmethod
    def _bounds_not_text(cls, data: Any) -> Any:
        preset = data.get("preset") if isinstance(data, dict) else None
        unit = Unit.SECONDS if preset in LATENCY_PRESETS else Unit.SHARE if preset in RATE_PRESETS else None
        refuse_text(data, ("max", "min", "threshold"), {"max": unit, "min": unit, "threshold": Unit.SECONDS})
        return data

    @property
    def counts_events(self) -> bool:
        """Judged on the counts since the rollout began (a sequential test, or a comparison with
        confidence): the operator reads both sides' totals and keeps the evidence in status."""
        return self.sequential is not None or (self.confident and self.preset in RATE_PRESETS)

    @property
    def bounds_quantile(self) -> bool:
        """A latency comparison with confidence: judged on each side's histogram bucket counts since
        the rollout began, kept in status."""
        return self.confident and self.preset in LATENCY_PRESETS

    @property
    def confident(self) -> bool:
        return self.compare is not None and self.compare.confidence is not None

    @model_validator(mode="after")
    def _well_formed(self) -> Self:
        name = self.name
        if (self.preset is None) == (self.query is None):
            raise ValueError(f"metric {name}: set exactly one of preset or query")
        if self.max is None and self.min is None and self.compare is None and self.sequential is None:
            raise ValueError(f"metric {name}: set max, min, compare or sequential")
        if self.max is not None and self.min is not None and self.min > self.max:
            raise FieldPathError("min", f"metric {name}: min must not be greater than max")
        for bound, value in (("max", self.max), ("min", self.min)):
            if value is None:
                continue
            if self.preset in RATE_PRESETS and not 0 <= value <= 1:
                raise FieldPathError(
                    bound, f"metric {name}: {self.preset} is a share of requests: {bound} must be in [0, 1]"
                )
            if self.preset in LATENCY_PRESETS and value <= 0:
                raise FieldPathError(
                    bound,
                    f"metric {name}: {self.preset} is a latency in seconds: max and min must be positive",
                )
            if self.preset in COUNT_PRESETS and value < 0:
                raise FieldPathError(
                    bound, f"metric {name}: {self.preset} counts: {bound} must not be negative"
                )
        if self.sequential is not None and self.preset not in RATE_PRESETS:
            raise FieldPathError(
                "sequential",
                f"metric {name}: a sequential test needs a preset that counts "
                f"requests: one of {', '.join(RATE_PRESETS)}",
            )
        if self.compare is not None:
            check_confidence(name, self.preset, self.compare, RATE_PRESETS, LATENCY_PRESETS)
        if (self.threshold is not None) != (self.preset == "slowRequestRate"):
            raise FieldPathError(
                "threshold",
                f"metric {name}: threshold is required by slowRequestRate and means nothing to other metrics",
            )
        if (self.goodput is not None) != (self.preset in GOODPUT_PRESETS):
            raise FieldPathError(
                "goodput",
                f"metric {name}: goodput (the ttft and tpot targets) is required by "
                f"{' and '.join(GOODPUT_PRESETS)} and means nothing to other metrics",
            )
        if self.source is not None and self.preset is None:
            raise FieldPathError("source", f"metric {name}: source applies to presets only")
        return self


COST_NEEDS_PRICES = (
    "costPerMillionTokens needs accelerators.incumbent.pricePerHour and accelerators.candidate.pricePerHour"
)


def _priced(side: str) -> str:
    return f"has(self.accelerators.{side}) && has(self.accelerators.{side}.pricePerHour)"


class AnalysisSpec(SpecModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "!self.metrics.exists(m, has(m.preset) && m.preset == 'costPerMillionTokens') || "
                f"(has(self.accelerators) && {_priced('incumbent')} && {_priced('candidate')})",
                field_path=".accelerators",
                message=COST_NEEDS_PRICES,
            )
        )
    )

    interval: Interval = Field(
        "30s", description="How often the metrics are evaluated, as a Go-style duration; at least 1s."
    )
    min_requests: Annotated[Integer, Field(ge=0, le=MAX_MIN_REQUESTS)] = Field(
        50,
        description="Candidate requests needed in the query window (the interval, but at least 1m) for a "
        "verdict, and incumbent requests too for metrics that compare; with fewer, Inconclusive. At most a "
        "billion: a window's requests are counted as a float, exact to 2^53.",
    )
    prometheus: PrometheusSpec = Field(description="The Prometheus server the metrics are read from.")
    source: MetricSource = Field(
        "vllm",
        description="The serving stack whose metric names the presets read (vllm, sglang, tgi, triton, "
        "llm-d, istio, traefik); a metric may name another.",
    )
    accelerators: AcceleratorSpec | None = Field(
        None,
        description="How each side's accelerators are counted, and their price: for the goodput and cost "
        "presets (default: the Ready Pods' requests of nvidia.com/gpu, no price).",
    )
    metrics: Annotated[tuple[MetricSpec, ...], Field(min_length=1, max_length=20)] = Field(
        description="The metrics to check, names unique. Missing data (an empty result, NaN, too few "
        "requests) is Inconclusive, never Pass.",
        json_schema_extra=list_map("name"),
    )

    @model_validator(mode="after")
    def _unique_metric_names(self) -> Self:
        check_unique_names(self.metrics)
        return self

    @model_validator(mode="after")
    def _priced_for_cost(self) -> Self:
        if any(m.preset == "costPerMillionTokens" for m in self.metrics) and not self.priced:
            raise FieldPathError("accelerators", COST_NEEDS_PRICES)
        return self

    @property
    def priced(self) -> bool:
        """Both sides have a price per accelerator-hour."""
        sides = (self.accelerators.incumbent, self.accelerators.candidate) if self.accelerators else ()
        return bool(sides) and all(side.price_per_hour is not None for side in sides)

    @property
    def interval_timedelta(self) -> timedelta:
        return parse_duration(self.interval)

    @property
    def provider_key(self) -> str:
        """The metric provider in use, by which providers are registered. Prometheus is the only
        provider field today; a second one makes this "the one provider field that is set"."""
        return "prometheus"


def check_unique_names(metrics: tuple[MetricSpec, ...]) -> None:
    """Raises naming the first metric whose name repeats an earlier one's."""
    seen: set[str] = set()
    for index, metric in enumerate(metrics):
        if metric.name in seen:
            raise FieldPathError(f"metrics[{index}].name", f"duplicate metric name {metric.name}")
        seen.add(metric.name)
