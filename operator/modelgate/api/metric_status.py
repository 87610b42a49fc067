"""ModelRollout.status.analysis: each metric's latest evaluation, its history and its evidence on counts."""

from typing import Annotated

from pydantic import Field, StringConstraints

from modelgate.api.bounds import Counted, Measured, MeasuredAmount
from modelgate.api.markers import NULLABLE
from modelgate.api.quantile_status import QuantileEvidence
from modelgate.api.series import MissingSeries
from modelgate.api.statusmodel import StatusModel, Timestamp, Verdict

EVALUATED_AT = "When the metric was evaluated."
VALUE_RETURNED = "The value the query returned; absent or null when there was none."


class AnalysisSample(StatusModel):
    """One past evaluation."""

    time: Timestamp = Field(description=EVALUATED_AT)
    value: Measured | None = Field(None, description=VALUE_RETURNED, json_schema_extra=NULLABLE)
    verdict: Verdict = Field(description="The verdict of that evaluation.")


class CounterTotals(StatusModel):
    """One side's cumulative counters as read at an evaluation, summed over the side's pods."""

    requests: MeasuredAmount = Field(description="The requests counter's total.")
    events: MeasuredAmount = Field(description="The events counter's total (errors, ...).")


class ConfidenceBounds(StatusModel):
    """What the counts so far show, anytime-valid (docs/statistics.md): the decision's evidence as data."""

    alpha: Measured = Field(description="The level of each one-sided bound.")
    rate_ratio_lower: Measured | None = Field(
        None,
        description="The candidate's rate over the incumbent's is above this (confidence 1 - alpha); null "
        "until the evidence bounds it. A sequential test fails when it reaches tolerance; a comparison with "
        "confidence when it is above maxRatio.",
        json_schema_extra=NULLABLE,
    )
    rate_ratio_upper: Measured | None = Field(
        None,
        description="The rate ratio is below this (confidence 1 - alpha); null until the evidence bounds it. "
        "A sequential test with a margin passes once it is at most the margin.",
        json_schema_extra=NULLABLE,
    )
    log_evidence: Measured = Field(
        description="Log of the e-value against 'the rate ratio is at most tolerance' (or maxRatio): a "
        "rollback needs log(1/alpha)."
    )
    log_margin_evidence: Measured | None = Field(
        None,
        description="Log of the e-value against 'the rate ratio is at least margin': a pass needs "
        "log(1/alpha); null without a margin.",
        json_schema_extra=NULLABLE,
    )
    increase_lower: Measured | None = Field(
        None,
        description="For compare.maxIncrease with confidence: the candidate's rate's lower bound minus the "
        "incumbent's upper bound (each at alpha/2); the comparison fails when it is above maxIncrease.",
        json_schema_extra=NULLABLE,
    )
    increase_upper: Measured | None = Field(
        None,
        description="For sequential.marginIncrease: the candidate's rate's upper bound minus the "
        "incumbent's lower bound (each at alpha/2); the metric passes once it is below marginIncrease.",
        json_schema_extra=NULLABLE,
    )


class SequentialEvidence(StatusModel):
    """The evidence on counts (a sequential test, a comparison with confidence), so that a restarted
    operator goes on with it."""

    log_likelihood_ratios: Annotated[
        tuple[Annotated[Measured, Field(description="The log likelihood ratio at one rate ratio.")], ...],
        Field(max_length=32),
    ] = Field(description="log L(theta) - log L(1), running, at each rate ratio of rateRatios.")
    rate_ratios: Annotated[
        tuple[Annotated[Measured, Field(description="One rate ratio (candidate over incumbent).")], ...],
        Field(max_length=32),
    ] = Field(
        (),
        description="The rate ratios theta the likelihood is kept at: a fixed grid and the spec's tolerance, "
        "margin and maxRatio. Evidence kept on another grid (an older operator's, or before a spec edit of "
        "those values) is not used: the test restarts from the totals it last read.",
    )
    log_evidence: Measured = Field(
        description="Log of the mixture's evidence against 'the candidate is no worse than tolerance'; the "
        "test rolls back when it reaches log(1/alpha)."
    )
    bounds: ConfidenceBounds | None = Field(
        None, description="The interval and e-values the verdict was decided on."
    )
    candidate_events: MeasuredAmount = Field(description="Events counted on the candidate.")
    candidate_requests: MeasuredAmount = Field(description="Candidate requests counted.")
    incumbent_events: MeasuredAmount = Field(description="Events counted on the incumbent.")
    incumbent_requests: MeasuredAmount = Field(description="Incumbent requests counted.")
    candidate_totals: CounterTotals | None = Field(
        None,
        description="The candidate's counters at the latest evaluation that read them; the next interval "
        "counts what they grew by. A total that went down (a pod restarted or left) is a new baseline.",
    )
    incumbent_totals: CounterTotals | None = Field(
        None, description="The incumbent's counters at the same evaluation, likewise."
    )
    margin_increase: Measured | None = Field(
        None,
        description="The sequential.marginIncrease these counts are judged against; a spec edit of it "
        "restarts the evidence from the totals last read, as one of tolerance or margin does.",
        json_schema_extra=NULLABLE,
    )


class MetricAnalysis(StatusModel):
    """The latest evaluation of one metric."""

    name: Annotated[str, StringConstraints(max_length=63)] = Field(
        description="The metric's name in spec.analysis.metrics."
    )
    verdict: Verdict = Field(
        description="Pass, Fail (threshold breached), Inconclusive (no data, NaN or too few requests) or "
        "Error (the query failed)."
    )
    time: Timestamp = Field(description=EVALUATED_AT)
    value: Measured | None = Field(None, description=VALUE_RETURNED, json_schema_extra=NULLABLE)
    incumbent_value: Measured | None = Field(
        None,
        description="The incumbent's value from the same query at the same time, for metrics that compare.",
        json_schema_extra=NULLABLE,
    )
    query: Annotated[str, StringConstraints(max_length=4096)] | None = Field(
        None, description="The PromQL that was run, with pod regular expressions filled in."
    )
    message: Annotated[str, StringConstraints(max_length=1024)] | None = Field(
        None, description="Why the verdict is what it is, e.g. the Prometheus error."
    )
    failures: Counted = Field(
        0,
        description="Fail verdicts of this metric since the rollout started; the rollout rolls back when "
        "this exceeds the metric's failureLimit.",
    )
    history: Annotated[tuple[AnalysisSample, ...], Field(max_length=10)] = Field(
        (), description="The most recent evaluations, oldest first, at most 10."
    )
    sequential: SequentialEvidence | None = Field(
        None, description="The sequential test's evidence so far, for metrics with a sequential test."
    )
    quantiles: QuantileEvidence | None = Field(
        None,
        description="For a latency comparison with confidence: each side's requests above each bucket "
        "boundary so far, and the quantile bounds they show.",
    )
    missing_series: Annotated[tuple[MissingSeries, ...], Field(max_length=8)] = Field(
        (), description="With an Inconclusive verdict: the series it reads that Prometheus has none of."
    )
