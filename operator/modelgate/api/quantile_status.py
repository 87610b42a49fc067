"""ModelRollout.status.analysis[].quantiles: a latency comparison's evidence on histogram counts
(compare.confidence on a latency preset), kept so that a restarted operator goes on with it."""

from typing import Annotated

from pydantic import Field

from modelgate.api.bounds import Measured, MeasuredAmount
from modelgate.api.markers import NULLABLE
from modelgate.api.statusmodel import StatusModel

# Boundaries kept: the longest grid a server exports, with room.
MAX_BOUNDARIES = 48
Amounts = Annotated[
    tuple[Annotated[MeasuredAmount, Field(description="A count at one boundary.")], ...],
    Field(max_length=MAX_BOUNDARIES),
]


class BucketReading(StatusModel):
    """One side's histogram as read at an evaluation, summed over the side's pods."""

    total: MeasuredAmount = Field(description="The requests observed (the +Inf bucket).")
    within: Amounts = Field(description="The requests observed at or below each boundary (cumulative).")


def _bound(side: str, which: str, meaning: str) -> Measured | None:
    return Field(
        None,
        description=f"The {side}'s quantile is {meaning} this boundary, in seconds (confidence 1 - alpha); "
        f"null until its counts show {which}.",
        json_schema_extra=NULLABLE,
    )


class QuantileBounds(StatusModel):
    """Where each side's quantile lies, as far as its bucket counts show (docs/statistics.md): each
    bound a bucket boundary, anytime-valid at alpha."""

    alpha: Measured = Field(description="The level of each side's bounds (half of confidence.alpha).")
    quantile: Measured = Field(description="The quantile bounded, e.g. 0.99 for ttftP99.")
    candidate_lower: Measured | None = _bound("candidate", "one", "above")
    candidate_upper: Measured | None = _bound("candidate", "one", "at most")
    incumbent_lower: Measured | None = _bound("incumbent", "one", "above")
    incumbent_upper: Measured | None = _bound("incumbent", "one", "at most")


class QuantileEvidence(StatusModel):
    """Each side's requests above each bucket boundary since the rollout began."""

    boundaries: Annotated[
        tuple[Annotated[Measured, Field(description="A bucket boundary in seconds.")], ...],
        Field(max_length=MAX_BOUNDARIES),
    ] = Field(description="The bucket boundaries both sides' histograms have, ascending, in seconds.")
    candidate_requests: MeasuredAmount = Field(description="Candidate requests counted.")
    incumbent_requests: MeasuredAmount = Field(description="Incumbent requests counted.")
    candidate_exceeding: Amounts = Field(description="Candidate requests counted above each boundary.")
    incumbent_exceeding: Amounts = Field(description="Incumbent requests counted above each boundary.")
    candidate_reading: BucketReading | None = Field(
        None,
        description="The candidate's histogram at the latest evaluation that read it; the next interval "
        "counts what it grew by. A count that went down (a pod restarted or left) is a new baseline.",
    )
    incumbent_reading: BucketReading | None = Field(
        None, description="The incumbent's histogram at the same evaluation, likewise."
    )
    bounds: QuantileBounds | None = Field(None, description="The bounds the verdict was decided on.")
