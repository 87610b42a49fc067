"""ModelRollout.status as frozen pydantic models; the engine returns a new status rather than editing one.

`make generate` writes the CRD's status schema from them, descriptions included.
"""

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    model_validator,
)

from modelgate.api.analysis_check import AnalysisCheck
from modelgate.api.bounds import Counted, MeasuredAmount
from modelgate.api.cost_status import CostStatus
from modelgate.api.errors import InvalidSpecError
from modelgate.api.gate_status import GateStatus
from modelgate.api.history import MAX_STEP_STARTS, MAX_WEIGHT_CHANGES, Offset, WeightChange
from modelgate.api.internal_error_status import InternalError
from modelgate.api.markers import ATOMIC, list_map
from modelgate.api.metric_status import MetricAnalysis
from modelgate.api.notifications import NotificationStatus
from modelgate.api.pause import RolloutPause
from modelgate.api.rollback_reason import RollbackReason
from modelgate.api.rollout_policy import PinnedPolicy
from modelgate.api.route_claim import RolloutRef
from modelgate.api.route_state import RouteState
from modelgate.api.statusmodel import StatusModel, Timestamp
from modelgate.api.workload_ref import IDENTITY_MAX

# metav1.Condition's: an optional DNS-subdomain prefix and "/", then a qualified name.
CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


# The Message column of `kubectl get modelrollouts`: a line of a terminal with the other columns.
SHORT_MESSAGE = 60
SHORT_MESSAGE_FIELD = "shortMessage"


def _status_schema(schema: dict[str, Any]) -> None:
    """The status's schema: atomic, and with the field to_patch derives from the message."""
    schema.update(ATOMIC)
    schema["properties"][SHORT_MESSAGE_FIELD] = {
        "type": "string",
        "maxLength": SHORT_MESSAGE,
        "description": f"The message's first line, cut to {SHORT_MESSAGE} characters: the Message "
        "column of `kubectl get modelrollouts` (status.message has all of it).",
    }


class Phase(StrEnum):
    PENDING = "Pending"
    GATING = "Gating"
    PROGRESSING = "Progressing"
    PAUSED = "Paused"
    SUCCEEDED = "Succeeded"
    ROLLED_BACK = "RolledBack"
    FAILED = "Failed"

    @property
    def ended(self) -> bool:
        """Succeeded, RolledBack or Failed: the rollout moves no more traffic of its own accord."""
        return self in (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)


class CommandResult(StrEnum):
    APPLIED = "Applied"
    IGNORED = "Ignored"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


MAX_WARNINGS = 20  # falseRollbackWarnings kept: the oldest go first


class FalseRollbackWarning(StatusModel):
    """A rule whose chance of rolling back a candidate as good as the incumbent, at the traffic the
    analysis measured, was above 20% in a step: warned of once (an Event) for that metric and step."""

    metric: Annotated[str, StringConstraints(max_length=63)] = Field(description="The metric's name.")
    step: Annotated[int, Field(ge=0, le=50)] = Field(description="The step the chance is for.")
    chance: Annotated[float, Field(ge=0, le=1)] = Field(
        description="The chance of a false rollback in the step, as computed then."
    )
    base_rate: Annotated[float, Field(ge=0, le=1)] = Field(
        description="The share of failing requests assumed of a good candidate: the incumbent's as "
        "measured, or the candidate's where the incumbent is not measured."
    )
    candidate_requests: MeasuredAmount = Field(
        description="The candidate's requests in one analysis window, as measured."
    )


class RollingBack(StatusModel):
    """A gradual rollback under way (spec.rollback.gradual): the candidate's weight falls linearly from
    fromWeight at startedAt to 0 at endsAt."""

    started_at: Timestamp = Field(description="When the rollback began.")
    from_weight: Annotated[int, Field(ge=0, le=100)] = Field(
        description="The candidate's weight when the rollback began."
    )
    ends_at: Timestamp = Field(description="When the candidate's weight reaches 0.")


class LastCommand(StatusModel):
    """The last manual command the operator handled (promote, abort, resume, retry): the CLI reads its
    result here. Its id makes a command apply once, even across operator restarts."""

    id: Annotated[str, StringConstraints(max_length=253)] = Field(description="Id the CLI gave the command.")
    name: Annotated[str, StringConstraints(max_length=63)] = Field(
        description="The command: promote, promote-full, abort, resume or retry."
    )
    result: CommandResult = Field(
        description="Applied, or Ignored when the command does not apply in the rollout's phase."
    )
    message: Annotated[str, StringConstraints(max_length=1024)] = Field(
        description="What the command did, or why it was ignored."
    )
    time: Timestamp = Field(description="When the operator handled it.")


class Condition(StatusModel):
    """One condition (the shape of metav1.Condition)."""

    type: Annotated[str, StringConstraints(max_length=316, pattern=CONDITION_TYPE_PATTERN)] = Field(
        description="Type of condition in CamelCase."
    )
    status: ConditionStatus = Field(description="Status of the condition.")
    reason: Annotated[
        str, StringConstraints(min_length=1, max_length=1024, pattern=CONDITION_REASON_PATTERN)
    ] = Field(description="Programmatic identifier of the reason for the last transition, in CamelCase.")
    message: Annotated[str, StringConstraints(max_length=32768)] = Field(
        description="Human-readable details of the last transition."
    )
    last_transition_time: Timestamp = Field(description="When the condition last changed status.")
    observed_generation: Counted | None = Field(
        None, description="The metadata.generation the condition was set for."
    )


class EarlierRollout(StatusModel):
    """A rollout this object ran before the current one (spec.candidate changed, or a retry)."""

    candidate: Annotated[str, StringConstraints(max_length=253)] = Field(
        description="Its candidate, as rolloutCandidate named it."
    )
    started_at: Timestamp | None = Field(None, description="When it started (unknown before this field).")
    phase: Phase | None = Field(None, description="Its phase when the next rollout started: its outcome.")


MAX_EARLIER_ROLLOUTS = 5  # earlierRollouts kept: the oldest go first


class ModelRolloutStatus(StatusModel):
    """Observed state, written only by the operator. Every wait is computed from the timestamps here, so
    a restarted operator resumes where it was."""

    # Written only by the operator, whole (to_patch): one managed-fields entry, not one per field.
    model_config = ConfigDict(json_schema_extra=_status_schema)

    phase: Phase | None = Field(
        None,
        description="Pending (waiting for the candidate to be Available), Gating (spec.gate's checks "
        "run, the candidate gets no traffic), Progressing, Paused (manual "
        "pause, or Prometheus errors with onPrometheusError=pause), Succeeded, RolledBack, or Failed (a "
        "configuration that cannot work, e.g. a missing HTTPRoute; the candidate's weight 0).",
    )
    message: Annotated[str, StringConstraints(max_length=4096)] | None = Field(
        None, description="Human-readable summary of what the operator is doing or waiting for."
    )
    observed_generation: Counted | None = Field(
        None, description="The metadata.generation of the spec this status was computed from."
    )
    rollout_candidate: Annotated[str, StringConstraints(max_length=IDENTITY_MAX)] | None = Field(
        None,
        description="The candidate this status belongs to: its Deployment's name (a one-edit rollout's "
        "generated one), <kind>.<group>/<name> for another workload, inferencepool/<name>, or "
        "inferencepool/<name>/adapter/<adapter>. "
        "When spec.candidate names another, the operator starts a new rollout from step 0.",
    )
    rollout_started_at: Timestamp | None = Field(
        None,
        description="When the rollout of rolloutCandidate started: `modelgate report` covers it from here.",
    )
    earlier_rollouts: Annotated[tuple[EarlierRollout, ...], Field(max_length=MAX_EARLIER_ROLLOUTS)] = Field(
        (), description="The rollouts this object ran before the current one, the newest last."
    )
    step_starts: Annotated[tuple[Offset, ...], Field(max_length=MAX_STEP_STARTS)] = Field(
        (),
        description="When each step of this rollout (rolloutCandidate) started, by step index, in seconds "
        "after rolloutStartedAt; one more than the steps for the end of the last. Steps passed in one "
        "tick share its time. Empty for a rollout begun under an operator without this record.",
    )
    weight_changes: Annotated[tuple[WeightChange, ...], Field(max_length=MAX_WEIGHT_CHANGES)] = Field(
        (),
        description="Each candidate weight this rollout asked for, when it changed (seconds after "
        "rolloutStartedAt), the oldest first; past 100 the oldest go.",
    )
    last_command: LastCommand | None = Field(
        None, description="The last manual command the operator handled, and its result."
    )
    current_step_index: Annotated[int, Field(ge=0, le=50)] = Field(
        0,
        description="Index into spec.steps of the step being executed; equals the number of steps once "
        "all have completed.",
    )
    current_weight: Annotated[int, Field(ge=0, le=100)] = Field(
        0, description="Percentage of traffic the operator last routed to the candidate."
    )
    live_weight: Annotated[int, Field(ge=0, le=100)] | None = Field(
        None,
        description="The candidate's weight on the route as the operator last read or wrote it; differs "
        "from currentWeight while a weight write has not taken. A write that took is recorded here with "
        "the rollout's next status change, or at its first tick 30 s after the write.",
    )
    current_mirror_percent: Annotated[int, Field(ge=0, le=100)] = Field(
        0,
        description="Percentage of requests the operator last asked to be copied to the candidate (a mirror "
        "step); 0 when nothing is mirrored.",
    )
    live_mirror_percent: Annotated[int, Field(ge=0, le=100)] | None = Field(
        None,
        description="The percentage of requests the route copies to the candidate, as the operator last "
        "read or wrote it; 0 when the route mirrors nothing to it.",
    )
    route_state: RouteState | None = Field(
        None,
        description="What the operator last found on the route: RouteFound, WeightNotApplied (a write "
        "that did not take, retried), RouteOverwritten or RouteConflict (another writer), RouteClaimed "
        "(another rollout owns the rule: routeOwner), IncumbentNotServed (its finished owner left it on "
        "a backend other than spec.incumbent), RouteHandedOver (this finished rollout handed the rule to "
        "routeOwner), or why the route cannot be used. The RouteReady condition says the same for people.",
    )
    route_owner: RolloutRef | None = Field(
        None,
        description="The other rollout that owns the route rule this one names (the first to write it, "
        "until it ends and a newer one takes it over), when it is not this one; absent otherwise.",
    )
    candidate_available: bool | None = Field(
        None,
        description="Whether the candidate was Available at the last tick that looked (the "
        "CandidateAvailable condition says why).",
    )
    pending_since: Timestamp | None = Field(
        None,
        description="When the rollout started waiting for the candidate to be Available, or (with "
        "spec.capacity.enforce) a step for its Ready replicas: the pending progress deadline counts from it.",
    )
    capacity_wait_since: Timestamp | None = Field(
        None,
        description="When the current setWeight step began waiting for Ready candidate replicas "
        "(spec.capacity.enforce); unset while no step waits. Condition CandidateCapacity gives the numbers.",
    )
    inconclusive_since: Timestamp | None = Field(
        None,
        description="When the current step's analysis first came out Inconclusive, unless it passed since "
        "(its progress deadline).",
    )
    watch_ends_at: Timestamp | None = Field(
        None,
        description="Set while the watch window (spec.watch) runs: the candidate takes all traffic, the "
        "analysis goes on, and at this time the rollout Succeeds.",
    )
    step_started_at: Timestamp | None = Field(
        None, description="When the current step started; timed pauses end at stepStartedAt + duration."
    )
    last_analysis_at: Timestamp | None = Field(
        None,
        description="When the metrics were last evaluated; the next evaluation is due one interval later. "
        "An evaluation that changes no verdict or count is recorded (here and in analysis) with the "
        "rollout's next status change, or at its first tick 30 s after it.",
    )
    consecutive_prometheus_errors: Counted = Field(
        0,
        description="Evaluations in a row in which a query failed; compared with "
        "spec.rollback.maxConsecutiveErrors, reset by an evaluation without errors.",
    )
    analysis: Annotated[tuple[MetricAnalysis, ...], Field(max_length=20)] = Field(
        (),
        description="The latest evaluation of each metric of spec.analysis.metrics.",
        json_schema_extra=list_map("name"),
    )
    cost: CostStatus | None = Field(
        None,
        description="Each side's cost per million output tokens at the latest evaluation, when "
        "spec.analysis.accelerators prices both sides.",
    )
    rollback_reason: RollbackReason | None = Field(
        None, description="Why the rollout was rolled back; cleared when it is retried."
    )
    internal_error: InternalError | None = Field(
        None,
        description="Set when the rollout was failed because its ticks kept raising an exception (a bug in "
        "the operator; phase Failed, the candidate's weight 0); cleared when it is retried.",
    )
    rolling_back: RollingBack | None = Field(
        None,
        description="Set while a gradual rollback steps the candidate's weight down (phase RolledBack, "
        "currentWeight still above 0); cleared when the weight reaches 0.",
    )
    gate: GateStatus | None = Field(
        None, description="The evaluation gate's checks, their evidence and its decision (spec.gate)."
    )
    false_rollback_warnings: Annotated[tuple[FalseRollbackWarning, ...], Field(max_length=MAX_WARNINGS)] = (
        Field(
            (),
            description="Rules found likely to roll back a candidate as good as the incumbent at the traffic "
            "measured (`modelgate plan` shows the same before a rollout); the newest last.",
        )
    )
    analysis_check: AnalysisCheck | None = Field(
        None,
        description="Whether the analysis's queries answer: until they do, the candidate gets no weight "
        "(or, after an edit of spec.analysis, no more).",
    )
    pause: RolloutPause | None = Field(
        None,
        description="Why the rollout is held, and since when; absent while nothing holds it. The "
        "conditions say the same for people; this is what `modelgate resume`, `promote` and `abort` act on.",
    )
    notifications: NotificationStatus | None = Field(
        None,
        description="The transitions noted for spec.notifications (or the operator's defaults) and not yet "
        "delivered: kept here so that a restarted operator still delivers them.",
    )
    policy: PinnedPolicy | None = Field(
        None,
        description="The policy of spec.policyRef as this rollout's candidate started with it: its "
        "generation, its spec and the resolved plan's hash. The rollout decides with it until "
        "`modelgate repin` or a new candidate (the PolicyDrift condition says when the policy changed).",
    )
    conditions: Annotated[tuple[Condition, ...], Field(max_length=16)] = Field(
        (),
        description="Standard Kubernetes conditions, one per type: what the operator saw, for readers; "
        "the operator decides on the fields above, never on a condition.",
        json_schema_extra=list_map("type"),
    )

    @property
    def ended(self) -> bool:
        """Succeeded, RolledBack or Failed (Phase.ended)."""
        return self.phase is not None and self.phase.ended

    def to_patch(self) -> dict[str, Any]:
        """The status as the body of a JSON merge patch of the status subresource.

        Unset fields are sent as null, not left out: a merge patch keeps every key it does not
        mention, so leaving out e.g. a cleared rollbackReason would keep the old one. The API server
        drops nulls the schema does not allow, so none are stored.
        """
        patch = self.model_dump(by_alias=True, mode="json")
        patch[SHORT_MESSAGE_FIELD] = short_message(self.message)  # derived where every status is written
        return patch

    @model_validator(mode="before")
    @classmethod
    def _without_derived_fields(cls, data: Any) -> Any:
        """shortMessage is the message's, written by to_patch: never held apart from it."""
        if isinstance(data, Mapping) and SHORT_MESSAGE_FIELD in data:
            return {key: value for key, value in data.items() if key != SHORT_MESSAGE_FIELD}
        return data


def short_message(message: str | None) -> str | None:
    """The message's first line within SHORT_MESSAGE characters, an ellipsis marking a cut."""
    if message is None:
        return None
    line = message.strip().split("\n", 1)[0]
    if len(line) <= SHORT_MESSAGE and line == message.strip():
        return line
    return f"{line[: SHORT_MESSAGE - 1].rstrip()}…"


def parse_status(status: Mapping[str, Any]) -> ModelRolloutStatus:
    """Read a ModelRollout's status; InvalidSpecError lists each problem as `status.<path>: <reason>`.
    The API server's schema is looser than the models (its date-time takes the year 9999, which no
    duration can be added to, and an object stored under an older CRD is never checked again)."""
    try:
        return ModelRolloutStatus.model_validate(status)
    except ValidationError as error:
        raise InvalidSpecError.from_validation_error(error, root="status") from None
