"""The current rollout's history as data: when each step started and each weight the operator asked
for. `modelgate report` draws its weight chart and step marks from these, not from Event texts."""

from typing import Annotated

from pydantic import Field

from modelgate.api.statusmodel import StatusModel, Timestamp

MAX_STEP_STARTS = 51  # every step of the most a spec may have (50), and the end of the last
MAX_WEIGHT_CHANGES = 100  # enough for a gradual rollback's descent; the oldest go first


class StepStart(StatusModel):
    """A step the rollout entered; steps passed in one tick share their time."""

    step: Annotated[int, Field(ge=0, le=50)] = Field(
        description="Index into spec.steps; the number of steps for the end of the last (the watch "
        "window, or the promotion)."
    )
    at: Timestamp = Field(description="When the step started.")


class WeightChange(StatusModel):
    """A candidate weight the operator asked for (currentWeight), when it changed."""

    weight: Annotated[int, Field(ge=0, le=100)] = Field(description="The candidate's weight, 0 to 100.")
    at: Timestamp = Field(description="When the operator asked for it.")
