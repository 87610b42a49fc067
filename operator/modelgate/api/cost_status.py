"""ModelRollout.status.cost: each side's cost per million output tokens.

ModelRollout.status.cost: what a million output tokens cost on each side's accelerators over the
latest evaluation's window, at spec.analysis.accelerators' prices (docs/metric-presets.md)."""

from pydantic import Field

from modelgate.api.bounds import Measured, MeasuredAmount
from modelgate.api.markers import NULLABLE
from modelgate.api.statusmodel import StatusModel, Timestamp


class SideCost(StatusModel):
    """One side's figures: costPerMillionTokens = accelerators x pricePerHour x windowSeconds / 3600
    / (outputTokens / 1e6)."""

    accelerators: MeasuredAmount = Field(
        description="The side's accelerators: spec.analysis.accelerators.<side>.count, or what its Ready "
        "Pods request."
    )
    price_per_hour: MeasuredAmount = Field(description="The price of one accelerator-hour.")
    output_tokens: MeasuredAmount | None = Field(
        None,
        description="What the side's output-token counter grew by over the window: its total at the "
        "evaluation less its total one window earlier; null when it could not be read or did not grow.",
        json_schema_extra=NULLABLE,
    )
    cost_per_million_tokens: Measured | None = Field(
        None,
        description="The price of a million output tokens; null without output tokens or accelerators.",
        json_schema_extra=NULLABLE,
    )


class CostStatus(StatusModel):
    time: Timestamp = Field(description="The evaluation the figures are from.")
    window_seconds: MeasuredAmount = Field(
        description="The window the output tokens were counted over (the analysis window)."
    )
    candidate: SideCost = Field(description="The candidate's figures.")
    incumbent: SideCost = Field(description="The incumbent's figures.")
