"""The current rollout's history as data: when each step started and each weight the operator asked
for, in seconds after status.rolloutStartedAt. `modelgate report` draws its weight chart and step
marks from these, not from Event texts. Numbers rather than timestamps: the status is read at every
tick, and a timestamp costs forty times a number to read."""

from typing import Annotated

from pydantic import Field

from modelgate.api.bounds import MeasuredAmount
from modelgate.api.statusmodel import StatusModel

MAX_STEP_STARTS = 51  # every step of the most a spec may have (50), and the end of the last
MAX_WEIGHT_CHANGES = 100  # enough for a gradual rollback's descent; the oldest go first

Offset = Annotated[MeasuredAmount, Field(description="Seconds after rolloutStartedAt, to the millisecond.")]


class WeightChange(StatusModel):
    """A candidate weight the operator asked for (currentWeight), when it changed."""

    weight: Annotated[int, Field(ge=0, le=100)] = Field(description="The candidate's weight, 0 to 100.")
    seconds: Offset = Field(description="When the operator asked for it: seconds after rolloutStartedAt.")
