"""spec.watch: the window after promotion in which the analysis goes on and a breach still rolls back."""

from datetime import timedelta
from typing import Annotated, Self

from pydantic import Field, model_validator

from modelgate.api.analysis import MetricSpec, check_unique_names
from modelgate.api.duration import parse_duration
from modelgate.api.fields import Boolean, PositiveDuration
from modelgate.api.markers import list_map
from modelgate.api.specmodel import SpecModel


class WatchSpec(SpecModel):
    """After the last step the candidate takes all traffic while the analysis goes on for `duration`;
    the phase stays Progressing (condition Watching) until the window passes, then Succeeded."""

    duration: PositiveDuration = Field(
        description="How long the analysis goes on after the last step, as a Go-style duration. A breach "
        "in the window rolls all traffic back to the incumbent (phase RolledBack) when the incumbent is "
        "Available; when it is not, the rollback is held (phase Paused, condition IncumbentAvailable "
        "False) until it is, or until `modelgate abort`. After the window: Succeeded."
    )
    metrics: Annotated[tuple[MetricSpec, ...], Field(min_length=1, max_length=20)] | None = Field(
        None,
        description="The metrics judged in the window, names unique, read from spec.analysis's Prometheus "
        "at its interval; absent: spec.analysis.metrics.",
        json_schema_extra=list_map("name"),
    )
    scale_down_incumbent: Boolean = Field(
        False,
        description="Scale the incumbent Deployment to 0 replicas once the window has passed (tried once; a "
        "failure is a Warning Event). The operator needs `patch` on deployments/scale, which the chart "
        "grants only with rbac.scaleDownIncumbents. Not with spec.candidatePatch's PromoteIntoIncumbent: "
        "there the incumbent takes the patch and the traffic back.",
    )

    @model_validator(mode="after")
    def _unique_metric_names(self) -> Self:
        if self.metrics is not None:
            check_unique_names(self.metrics)
        return self

    @property
    def duration_timedelta(self) -> timedelta:
        return parse_duration(self.duration)
