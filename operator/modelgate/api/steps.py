"""ModelRollout.spec.steps: set a weight, pause, or mirror."""

from datetime import timedelta
from typing import Annotated, Self

from pydantic import ConfigDict, Field, model_validator

from modelgate.api.duration import parse_duration
from modelgate.api.fields import Duration, Integer, PositiveDuration
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.specmodel import SpecModel


class Pause(SpecModel):
    duration: Duration | None = Field(
        None, description="How long to pause, as a Go-style duration (30s, 5m, 1h30m)."
    )

    @property
    def duration_timedelta(self) -> timedelta | None:
        """None for an indefinite pause, which lasts until promoted."""
        return None if self.duration is None else parse_duration(self.duration)


class Mirror(SpecModel):
    percent: Annotated[Integer, Field(ge=1, le=100)] = Field(
        description="Percentage of the route rule's requests copied to the candidate; the copies' answers "
        "are discarded, users get the answers of the backend that served them."
    )
    duration: PositiveDuration = Field(
        description="How long to mirror, as a Go-style duration; with analysis, the step also waits for "
        "a passing evaluation."
    )

    @property
    def duration_timedelta(self) -> timedelta:
        return parse_duration(self.duration)


STEP_KINDS = "set exactly one of setWeight, pause or mirror"


class Step(SpecModel):
    """One step; set exactly one of setWeight, pause or mirror."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "[has(self.setWeight), has(self.pause), has(self.mirror)].exists_one(k, k)",
                message=STEP_KINDS,
            )
        )
    )

    set_weight: Annotated[Integer, Field(ge=0, le=100)] | None = Field(
        None, description="Route this percentage of traffic to the candidate."
    )
    pause: Pause | None = Field(
        None,
        description="Hold the current weight, analysis continuing. Without a duration the pause lasts "
        "until `modelgate promote`.",
    )

    mirror: Mirror | None = Field(
        None,
        description="Shadow the candidate: copy a share of the rule's requests to it for a while, its "
        "weight unchanged (0 before any setWeight), and judge its own metrics on the copies. The copies "
        "stop in the same write as the next step's weight, and on rollback. The gatewayAPI router writes a "
        "RequestMirror filter, the istio router the http route's mirror.",
    )

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Self:
        if [self.set_weight, self.pause, self.mirror].count(None) != 2:
            raise ValueError(STEP_KINDS)
        return self
