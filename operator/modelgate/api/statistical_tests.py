"""How a metric compares the candidate with the incumbent: a ratio, an increase, a test.

How a metric compares the candidate with the incumbent: a ratio or increase of the same query
(with optional anytime-valid bounds), or a sequential test on counts (docs/statistics.md)."""

from collections.abc import Callable
from typing import Annotated, Self

from pydantic import ConfigDict, Field, model_validator

from modelgate.api.bounds import METRIC_BOUND, RATIO_MAX, nonzero
from modelgate.api.errors import FieldPathError
from modelgate.api.fields import Number
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.specmodel import SpecModel


def _alpha_rule() -> CelRule:
    return nonzero("alpha", "must be in (0, 0.5]")


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha <= 0.5:
        raise FieldPathError("alpha", f"must be in (0, 0.5] (got {alpha})")


MARGINS_APART = "cannot be combined with margin: set one margin, a ratio or an increase"
MIN_RATIO_WITHOUT_CONFIDENCE = (
    "cannot be combined with confidence: the anytime-valid bounds are for rates, where lower is better"
)


class Confidence(SpecModel):
    """Anytime-valid bounds for a comparison (compare.confidence): of rates, or of a latency quantile
    from its histogram's bucket counts."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            _alpha_rule(),
            CelRule(
                "!has(self.margin) || (self.margin >= 1.0 && self.margin <= 10.0)",
                field_path=".margin",
                message="must be in [1, 10]: a ratio of the candidate's quantile to the incumbent's",
            ),
        )
    )

    alpha: Annotated[Number, Field(ge=0, le=0.5)] = Field(
        0.05,
        description="The false-rollback probability allowed, in (0, 0.5]; with both maxRatio and "
        "maxIncrease, each rule is judged at half of it.",
    )

    margin: Annotated[Number, Field(ge=1, le=10)] | None = Field(
        None,
        description="For latency presets: pass only once the candidate's quantile is, with confidence, "
        "below margin x the incumbent's (its upper bound at most margin x the incumbent's lower bound), "
        "Inconclusive until then; in [1, 10]. The bounds are bucket boundaries, so a margin below the "
        "ratio of neighbouring boundaries around the quantile is never shown (docs/statistics.md).",
    )

    @model_validator(mode="after")
    def _alpha_in_range(self) -> Self:
        _check_alpha(self.alpha)
        if self.margin is not None and not 1 <= self.margin <= 10:
            raise FieldPathError("margin", f"must be in [1, 10] (got {self.margin})")
        return self


class Comparison(SpecModel):
    """The candidate against the incumbent, both read from the same query at the same time."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "has(self.maxRatio) || has(self.maxIncrease) || has(self.minRatio)",
                message="set maxRatio, maxIncrease, minRatio or several",
            ),
            nonzero("minRatio", "must be positive", optional=True),
            CelRule(
                "!has(self.minRatio) || !has(self.confidence)",
                field_path=".minRatio",
                message=MIN_RATIO_WITHOUT_CONFIDENCE,
            ),
            nonzero("maxRatio", "must be positive", optional=True),
            CelRule(
                "!has(self.confidence) || !has(self.maxRatio) "
                "|| (self.maxRatio >= 1.0 && self.maxRatio <= 10.0)",
                field_path=".maxRatio",
                message="with confidence, must be in [1, 10]: the ratio of two rates the sequence bounds",
            ),
        )
    )

    max_ratio: Annotated[Number, Field(ge=0, le=RATIO_MAX)] | None = Field(
        None,
        description="Fails when candidate > maxRatio x incumbent, e.g. 1.2 for a TTFT P99 at most 20% "
        "higher.",
    )
    max_increase: Annotated[Number, Field(ge=0, le=METRIC_BOUND)] | None = Field(
        None,
        description="Fails when candidate > incumbent + maxIncrease, in the metric's unit, e.g. 0.005 for "
        "an error rate at most half a point higher.",
    )
    min_ratio: Annotated[Number, Field(ge=0, le=RATIO_MAX)] | None = Field(
        None,
        description="Fails when candidate < minRatio x incumbent, for metrics where higher is better, e.g. "
        "0.9 for a goodput at least 90% of the incumbent's.",
    )
    confidence: Confidence | None = Field(
        None,
        description="Judge by anytime-valid bounds on the counts since the rollout began instead of one "
        "window's values (docs/statistics.md). Rate presets: maxRatio fails only when the rate ratio's "
        "lower bound is above it, maxIncrease only when the candidate's lower bound minus the incumbent's "
        "upper bound is above it. Latency presets (from the histogram's bucket counts): maxRatio fails "
        "only when the candidate's quantile's lower bound is at least maxRatio x the incumbent's upper "
        "bound. A false Fail has probability at most alpha however often it is evaluated.",
    )

    @model_validator(mode="after")
    def _well_formed(self) -> Self:
        if self.max_ratio is None and self.max_increase is None and self.min_ratio is None:
            raise ValueError("set maxRatio, maxIncrease, minRatio or several")
        if self.max_ratio is not None and self.max_ratio <= 0:
            raise FieldPathError("maxRatio", "must be positive")
        if self.min_ratio is not None and self.min_ratio <= 0:
            raise FieldPathError("minRatio", "must be positive")
        if self.min_ratio is not None and self.confidence is not None:
            raise FieldPathError("minRatio", MIN_RATIO_WITHOUT_CONFIDENCE)
        if self.confidence is not None and self.max_ratio is not None and not 1 <= self.max_ratio <= 10:
            raise FieldPathError(
                "maxRatio",
                "with confidence, must be in [1, 10]: the ratio of two rates the sequence bounds "
                f"(got {self.max_ratio})",
            )
        return self


class SequentialTest(SpecModel):
    """An anytime-valid confidence sequence for the candidate's rate over the incumbent's, on counts:
    rolls back as soon as it lies above `tolerance`; with a `margin`, passes only once it lies below
    the margin, or with a `marginIncrease` once the candidate's rate is shown at most that much above
    the incumbent's (Inconclusive until then). Each wrong decision has a probability of at most alpha
    however long the rollout runs (docs/statistics.md)."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            _alpha_rule(),
            CelRule(
                "self.tolerance >= 1.0 && self.tolerance <= 10.0",
                field_path=".tolerance",
                message="must be in [1, 10]",
            ),
            CelRule(
                "!has(self.margin) || (self.margin > self.tolerance && self.margin <= 10.0)",
                field_path=".margin",
                message="must be greater than tolerance (default 1) and at most 10",
            ),
            nonzero("marginIncrease", "must be in (0, 0.5]", optional=True),
            CelRule(
                "!has(self.margin) || !has(self.marginIncrease)",
                field_path=".marginIncrease",
                message=MARGINS_APART,
            ),
        )
    )

    alpha: Annotated[Number, Field(ge=0, le=0.5)] = Field(
        0.05,
        description="The probability allowed of each wrong decision, in (0, 0.5]: a rollback of a candidate "
        "no worse than tolerance, and a pass of one at or above margin.",
    )
    tolerance: Annotated[Number, Field(ge=1, le=10)] = Field(
        1.0,
        description="Rolls back when the candidate's rate is, with confidence, above tolerance x the "
        "incumbent's; in [1, 10]. The default 1 rolls back any candidate shown to be worse.",
    )
    margin: Annotated[Number, Field(ge=1, le=10)] | None = Field(
        None,
        description="A non-inferiority margin, a rate ratio above tolerance and at most 10, e.g. 1.25: the "
        "metric passes only once the candidate's rate is, with confidence, below margin x the "
        "incumbent's, and is Inconclusive until then (evidence of no harm). Without it the metric passes "
        "while there is no evidence of harm.",
    )
    margin_increase: Annotated[Number, Field(ge=0, le=0.5)] | None = Field(
        None,
        description="A non-inferiority margin in rate points, in (0, 0.5], e.g. 0.001: the metric passes "
        "only once the candidate's rate's upper bound minus the incumbent's lower bound (each an "
        "anytime-valid sequence at alpha/2) is below it, and is Inconclusive until then. Unlike margin, "
        "it can be shown with no events at all: with none on either side it passes after about "
        "log(4/alpha)/marginIncrease candidate requests (docs/statistics.md). Not with margin.",
    )

    @model_validator(mode="after")
    def _in_range(self) -> Self:
        _check_alpha(self.alpha)
        if not 1 <= self.tolerance <= 10:
            raise FieldPathError("tolerance", f"must be in [1, 10] (got {self.tolerance})")
        if self.margin is not None and not self.tolerance < self.margin <= 10:
            raise FieldPathError(
                "margin",
                f"must be greater than tolerance ({self.tolerance:g}) and at most 10 (got {self.margin})",
            )
        if self.margin_increase is not None and not 0 < self.margin_increase <= 0.5:
            raise FieldPathError("marginIncrease", f"must be in (0, 0.5] (got {self.margin_increase})")
        if self.margin is not None and self.margin_increase is not None:
            raise FieldPathError("marginIncrease", MARGINS_APART)
        return self


LATENCY_INCREASE = (
    "cannot be combined with confidence on a latency preset: its bounds are on a quantile, judged as a "
    "ratio; use maxRatio"
)
RATE_MARGIN = "applies to latency presets; on a rate preset, use sequential.margin"


def _presets_message(rates: tuple[str, ...], latencies: tuple[str, ...]) -> str:
    return (
        f"compare.confidence needs a preset that counts requests ({', '.join(rates)}) or a latency "
        f"histogram ({', '.join(latencies)})"
    )


def confidence_rules(
    rates: tuple[str, ...], latencies: tuple[str, ...], cel_list: Callable[[tuple[str, ...]], str]
) -> tuple[CelRule, ...]:
    """A metric's CEL rules on compare.confidence: which presets it applies to, and what it combines with."""
    confident = "has(self.compare) && has(self.compare.confidence)"
    latency = f"has(self.preset) && self.preset in {cel_list(latencies)}"

    def named(message: str) -> str:
        return f"'metric ' + self.name + ': {message}'"

    return (
        CelRule(
            f"!({confident}) || (has(self.preset) && self.preset in {cel_list((*rates, *latencies))})",
            field_path=".compare.confidence",
            message_expression=named(_presets_message(rates, latencies)),
        ),
        CelRule(
            f"!({confident}) || !({latency}) || !has(self.compare.maxIncrease)",
            field_path=".compare.maxIncrease",
            message_expression=named(f"compare.maxIncrease {LATENCY_INCREASE}"),
        ),
        CelRule(
            f"!({confident}) || !has(self.compare.confidence.margin) || ({latency})",
            field_path=".compare.confidence.margin",
            message_expression=named(f"compare.confidence.margin {RATE_MARGIN}"),
        ),
    )


def check_confidence(
    name: str, preset: str | None, compare: Comparison, rates: tuple[str, ...], latencies: tuple[str, ...]
) -> None:
    """The CEL rules of `confidence_rules`, for a spec read without the API server."""
    confidence = compare.confidence
    if confidence is None:
        return
    if preset not in (*rates, *latencies):
        raise FieldPathError("compare.confidence", f"metric {name}: {_presets_message(rates, latencies)}")
    if preset in latencies and compare.max_increase is not None:
        raise FieldPathError("compare.maxIncrease", f"metric {name}: compare.maxIncrease {LATENCY_INCREASE}")
    if preset not in latencies and confidence.margin is not None:
        raise FieldPathError(
            "compare.confidence.margin", f"metric {name}: compare.confidence.margin {RATE_MARGIN}"
        )
