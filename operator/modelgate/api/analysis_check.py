"""ModelRollout.status.analysisCheck: whether the analysis's queries answer.

ModelRollout.status.analysisCheck: whether the analysis's queries answer, checked before the
candidate's first weight and again after a spec edit that changes the analysis. No traffic moves on
a judge that cannot be asked."""

from typing import Annotated

from pydantic import Field, StringConstraints

from modelgate.api.statusmodel import StatusModel, Timestamp


class UnansweredQuery(StatusModel):
    """One metric whose queries did not answer, and why."""

    metric: Annotated[str, StringConstraints(max_length=63)] | None = Field(
        None,
        description="The metric in spec.analysis.metrics; absent for the request count that minRequests "
        "is held to.",
    )
    error: Annotated[str, StringConstraints(max_length=1024)] = Field(description="Why it did not answer.")


class AnalysisCheck(StatusModel):
    """The latest check of the analysis's queries."""

    analysis: Annotated[str, StringConstraints(max_length=64)] = Field(
        description="A digest of the spec.analysis checked: an edit that changes it is checked again."
    )
    at: Timestamp = Field(description="When the queries were last run; retried every analysis interval.")
    address: Annotated[str, StringConstraints(max_length=2048)] | None = Field(
        None, description="Where the queries were sent (spec.analysis.prometheus.address)."
    )
    unanswered: Annotated[tuple[UnansweredQuery, ...], Field(max_length=21)] = Field(
        (),
        description="The queries that did not answer; empty once every query answered (a value, or no "
        "data, which minRequests and the verdicts handle).",
    )

    @property
    def answered(self) -> bool:
        return not self.unanswered
