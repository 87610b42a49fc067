"""Spec models of how a rollout backs out: a gradual rollback, what deleting it does to the route,
and capacity before weight."""

from datetime import timedelta
from typing import Literal

from pydantic import Field

from modelgate.api.duration import parse_duration
from modelgate.api.fields import Boolean, PositiveDuration
from modelgate.api.specmodel import SpecModel

OnDelete = Literal["Leave", "ReturnTraffic"]


class GradualRollback(SpecModel):
    duration: PositiveDuration = Field(
        description="How long the candidate's weight takes to fall from where it was to 0, as a Go-style "
        "duration. Applies to rollbacks by `modelgate abort` and by a progress deadline; a metric "
        "breach, before or during it, and a rollback on Prometheus errors still set 0 at once."
    )

    @property
    def duration_timedelta(self) -> timedelta:
        return parse_duration(self.duration)


class CapacitySpec(SpecModel):
    enforce: Boolean = Field(
        False,
        description="A setWeight step that raises the candidate's weight to W waits until the candidate "
        "has ceil(incumbent Ready replicas x W / 100) Ready replicas; status.message and the "
        "CandidateCapacity condition give the numbers meanwhile. spec.progressDeadlines.pending bounds "
        "the wait (unset: after 10m the rollout fails, its traffic back on the incumbent).",
    )
