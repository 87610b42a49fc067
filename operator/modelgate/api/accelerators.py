"""ModelRollout.spec.analysis.accelerators: what a side's accelerators are counted by, or how many it
has, and what one costs an hour. The goodput presets divide by the count; the cost preset multiplies
by it and the price (docs/metric-presets.md#goodput-and-cost)."""

from typing import Annotated, Self

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from modelgate.api.bounds import nonzero
from modelgate.api.errors import FieldPathError
from modelgate.api.fields import RESOURCE_NAME_PATTERN, Number
from modelgate.api.markers import cel_rules
from modelgate.api.specmodel import SpecModel

DEFAULT_RESOURCE = "nvidia.com/gpu"
# A million accelerators is more than any one Deployment has; a million per accelerator-hour leaves
# room for any currency while the cost they are multiplied into stays finite (issue 34).
MAX_ACCELERATORS = 1_000_000.0
MAX_PRICE_PER_HOUR = 1_000_000.0
ResourceName = Annotated[str, StringConstraints(max_length=317, pattern=RESOURCE_NAME_PATTERN)]


class SideAccelerators(SpecModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(nonzero("count", "must be positive", optional=True))
    )

    count: Annotated[Number, Field(ge=0, le=MAX_ACCELERATORS)] | None = Field(
        None,
        description="The side's accelerators in all, instead of the sum of its Ready Pods' requests of "
        "resourceName (e.g. for accelerators a device plugin does not request by name); at most a million.",
    )
    price_per_hour: Annotated[Number, Field(ge=0, le=MAX_PRICE_PER_HOUR)] | None = Field(
        None,
        description="The price of one accelerator for one hour, in any currency (the same for both "
        "sides), at most a million: room for any currency, and the cost it is multiplied into stays finite; "
        "the costPerMillionTokens preset needs it on both sides.",
    )

    @model_validator(mode="after")
    def _positive_count(self) -> Self:
        if self.count is not None and self.count <= 0:
            raise FieldPathError("count", f"must be positive (got {self.count})")
        return self


class AcceleratorSpec(SpecModel):
    resource_name: ResourceName = Field(
        DEFAULT_RESOURCE,
        description="The resource a side's accelerators are requested as: the operator adds up the "
        "requests of it (limits where a container requests none) of every container of the side's "
        "Ready Pods.",
    )
    incumbent: SideAccelerators = Field(SideAccelerators(), description="The incumbent's count and price.")
    candidate: SideAccelerators = Field(SideAccelerators(), description="The candidate's count and price.")
