"""ModelRollout.status as frozen pydantic models; the engine returns a new status rather than editing one."""

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, FiniteFloat, StringConstraints
from pydantic.alias_generators import to_camel

# metav1.Condition's: an optional DNS-subdomain prefix and "/", then a qualified name.
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


def _in_utc(moment: datetime) -> datetime:
    # Aware datetimes only: a naive one would be serialized without an offset, which is not RFC 3339.
    if moment.tzinfo is None:
        raise ValueError("must include a time zone")
    return moment.astimezone(UTC)


Timestamp = Annotated[datetime, AfterValidator(_in_utc)]
"""A moment in UTC, serialized as RFC 3339 with a `Z` suffix."""


class Phase(StrEnum):
    PENDING = "Pending"
    PROGRESSING = "Progressing"
    PAUSED = "Paused"
    SUCCEEDED = "Succeeded"
    ROLLED_BACK = "RolledBack"
    FAILED = "Failed"


class Verdict(StrEnum):
    PASS = "Pass"
    FAIL = "Fail"
    INCONCLUSIVE = "Inconclusive"
    ERROR = "Error"


class CommandResult(StrEnum):
    APPLIED = "Applied"
    IGNORED = "Ignored"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class StatusModel(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel, extra="forbid")


class AnalysisSample(StatusModel):
    time: Timestamp
    value: FiniteFloat | None = None
    verdict: Verdict


class MetricAnalysis(StatusModel):
    name: Annotated[str, StringConstraints(max_length=63)]
    verdict: Verdict
    time: Timestamp
    value: FiniteFloat | None = None
    query: Annotated[str, StringConstraints(max_length=4096)] | None = None
    message: Annotated[str, StringConstraints(max_length=1024)] | None = None
    failures: Annotated[int, Field(ge=0)] = 0  # Fail verdicts in this rollout, against failureLimit
    history: Annotated[tuple[AnalysisSample, ...], Field(max_length=10)] = ()


class RollbackReason(StatusModel):
    time: Timestamp
    message: Annotated[str, StringConstraints(max_length=1024)]
    metric: Annotated[str, StringConstraints(max_length=63)] | None = None
    value: FiniteFloat | None = None
    threshold: FiniteFloat | None = None
    query: Annotated[str, StringConstraints(max_length=4096)] | None = None


class LastCommand(StatusModel):
    """The last manual command the operator handled (promote, abort, resume, retry): the CLI reads
    its result here. Its id makes a command apply once, even across operator restarts."""

    id: Annotated[str, StringConstraints(max_length=253)]
    name: Annotated[str, StringConstraints(max_length=63)]
    result: CommandResult
    message: Annotated[str, StringConstraints(max_length=1024)]
    time: Timestamp


class Condition(StatusModel):
    type: Annotated[str, StringConstraints(max_length=316, pattern=CONDITION_TYPE_PATTERN)]
    status: ConditionStatus
    reason: Annotated[str, StringConstraints(min_length=1, max_length=1024, pattern=CONDITION_REASON_PATTERN)]
    message: Annotated[str, StringConstraints(max_length=32768)]
    last_transition_time: Timestamp
    observed_generation: Annotated[int, Field(ge=0)] | None = None


class ModelRolloutStatus(StatusModel):
    phase: Phase | None = None
    message: Annotated[str, StringConstraints(max_length=4096)] | None = None
    observed_generation: Annotated[int, Field(ge=0)] | None = None
    rollout_candidate: Annotated[str, StringConstraints(max_length=253)] | None = None
    last_command: LastCommand | None = None
    current_step_index: Annotated[int, Field(ge=0, le=50)] = 0
    current_weight: Annotated[int, Field(ge=0, le=100)] = 0
    # What the router read from, or wrote to, the route: differs from current_weight while a write
    # has not taken.
    live_weight: Annotated[int, Field(ge=0, le=100)] | None = None
    step_started_at: Timestamp | None = None
    last_analysis_at: Timestamp | None = None
    consecutive_prometheus_errors: Annotated[int, Field(ge=0)] = 0
    analysis: Annotated[tuple[MetricAnalysis, ...], Field(max_length=20)] = ()
    rollback_reason: RollbackReason | None = None
    conditions: Annotated[tuple[Condition, ...], Field(max_length=16)] = ()

    def to_patch(self) -> dict[str, Any]:
        """The status as the body of a JSON merge patch of the status subresource.

        Unset fields are sent as null, not left out: a merge patch keeps every key it does not
        mention, so leaving out e.g. a cleared rollbackReason would keep the old one. The API server
        drops nulls the schema does not allow, so none are stored.
        """
        return self.model_dump(by_alias=True, mode="json")
