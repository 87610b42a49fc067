"""The service level a request must meet to count towards goodput (spec.analysis.metrics[].goodput)."""

from typing import Annotated, Any, Self

from pydantic import ConfigDict, Field, model_validator

from modelgate.api.bounds import LATENCY_MAX, nonzero
from modelgate.api.errors import FieldPathError
from modelgate.api.fields import Number
from modelgate.api.markers import cel_rules
from modelgate.api.specmodel import SpecModel
from modelgate.api.unit_hints import Unit, refuse_text


class GoodputTargets(SpecModel):
    """The service level a request must meet to count towards goodput."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(nonzero("ttft", "must be positive"), nonzero("tpot", "must be positive"))
    )

    ttft: Annotated[Number, Field(ge=0, le=LATENCY_MAX)] = Field(
        description="Time to first token, in seconds, that a request must not exceed; rounded down to "
        "the histogram's nearest bucket bound (docs/metric-presets.md#goodput-and-cost)."
    )
    tpot: Annotated[Number, Field(ge=0, le=LATENCY_MAX)] = Field(
        description="Time per output token, in seconds, that a request must not exceed; rounded down "
        "to the histogram's nearest bucket bound."
    )

    @model_validator(mode="before")
    @classmethod
    def _latencies_not_text(cls, data: Any) -> Any:
        refuse_text(data, ("ttft", "tpot"), {"ttft": Unit.SECONDS, "tpot": Unit.SECONDS})
        return data

    @model_validator(mode="after")
    def _positive(self) -> Self:
        for name, value in (("ttft", self.ttft), ("tpot", self.tpot)):
            if value <= 0:
                raise FieldPathError(name, f"must be positive (got {value})")
        return self
