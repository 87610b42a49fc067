"""Why a rollout rolled back (status.rollbackReason): the rule, the value, the evidence.

Why a rollout rolled back, as status.rollbackReason keeps it: the rule the value broke, the
value and its bound, and the evidence behind it (the requests' traces, the value per pod)."""

from enum import StrEnum
from typing import Annotated

from pydantic import Field, StringConstraints

from modelgate.api.bounds import Measured
from modelgate.api.markers import NULLABLE
from modelgate.api.metric_status import ConfidenceBounds
from modelgate.api.quantile_status import QuantileBounds
from modelgate.api.statusmodel import StatusModel, Timestamp


class BreachRule(StrEnum):
    """Which of a metric's rules the value broke."""

    MAX = "Max"
    MIN = "Min"
    MAX_RATIO = "MaxRatio"  # compare.maxRatio: above the incumbent's value times the ratio
    MAX_INCREASE = "MaxIncrease"  # compare.maxIncrease: above the incumbent's value plus the increase
    MIN_RATIO = "MinRatio"  # compare.minRatio: below the incumbent's value times the ratio
    SEQUENTIAL = "Sequential"  # the sequential test's confidence sequence lies above its tolerance


class BreachTrace(StatusModel):
    """One request behind a breach: an exemplar Prometheus stored on the breaching metric's series."""

    trace_id: Annotated[str, StringConstraints(min_length=1, max_length=128)] = Field(
        description="The exemplar's trace ID (its trace_id or traceID label), for the tracing backend."
    )
    pod: Annotated[str, StringConstraints(max_length=253)] | None = Field(
        None, description="The pod label of the series the exemplar was on."
    )
    value: Measured | None = Field(
        None, description="The exemplar's value: the request's latency on a histogram, 1 on a counter."
    )
    time: Timestamp | None = Field(None, description="When the request was observed.")


class PodValue(StatusModel):
    """The breaching metric's value over one pod of the candidate's."""

    pod: Annotated[str, StringConstraints(max_length=253)] = Field(description="The pod's name.")
    value: Measured | None = Field(
        None,
        description="The metric's query over this pod alone; null when it had no data.",
        json_schema_extra=NULLABLE,
    )


class RollbackReason(StatusModel):
    time: Timestamp = Field(description="When the rollback was decided.")
    message: Annotated[str, StringConstraints(max_length=1024)] = Field(
        description='Human-readable cause, e.g. "metric error-rate: 0.034 is above the maximum 0.01; 1 '
        'breach, failureLimit 0" or "aborted by `modelgate abort`".'
    )
    metric: Annotated[str, StringConstraints(max_length=63)] | None = Field(
        None, description="The metric that failed; absent for a manual abort or Prometheus errors."
    )
    value: Measured | None = Field(None, description="The failing value.", json_schema_extra=NULLABLE)
    threshold: Measured | None = Field(
        None,
        description="The effective bound the value breached: max or min, or for a comparison the incumbent's "
        "value times maxRatio or plus maxIncrease; for a sequential test or a comparison with confidence, "
        "the tolerance, maxRatio or maxIncrease the bounds crossed.",
    )
    rule: BreachRule | None = Field(None, description="Which rule the value broke.")
    bounds: ConfidenceBounds | None = Field(
        None,
        description="For a sequential test or a comparison with confidence: the interval and the evidence "
        "that decided the rollback (threshold is then the tolerance, maxRatio or maxIncrease it crossed).",
    )
    quantile_bounds: QuantileBounds | None = Field(
        None,
        description="For a latency comparison with confidence: each side's quantile bounds that decided "
        "the rollback (threshold is then the maxRatio they crossed).",
    )
    incumbent_value: Measured | None = Field(
        None, description="For a comparison or the sequential test: the incumbent's value in the same window."
    )
    query: Annotated[str, StringConstraints(max_length=4096)] | None = Field(
        None, description="The PromQL that returned the failing value."
    )
    traces: Annotated[tuple[BreachTrace, ...], Field(max_length=5)] = Field(
        (),
        description="A few requests behind a metric breach, from the exemplars of the breaching series in "
        "the analysis window (the worst first); empty when the metric's series carry none "
        "(docs/tracing-rollbacks.md).",
    )
    pods: Annotated[tuple[PodValue, ...], Field(max_length=20)] = Field(
        (),
        description="The breaching metric per candidate pod, worst first: one bad pod, or all of them?",
    )
