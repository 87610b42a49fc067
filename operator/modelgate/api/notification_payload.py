"""The JSON a webhook receiver gets (docs/notifications.md is checked against this model). It carries
what Flagger's webhook payload does (name, namespace, phase, checksum, metadata) and what a person
paged at night needs: the step, the weights, why it rolled back, the gate's decision."""

from typing import Annotated

from pydantic import Field, StringConstraints

from modelgate.api.gate_status import GateDecision
from modelgate.api.notifications import Transition
from modelgate.api.pause import RolloutPause
from modelgate.api.rollback_reason import RollbackReason
from modelgate.api.status import Phase
from modelgate.api.statusmodel import StatusModel, Timestamp


class Weights(StatusModel):
    candidate: Annotated[int, Field(ge=0, le=100)] = Field(description="The candidate's share of traffic, %.")
    incumbent: Annotated[int, Field(ge=0, le=100)] = Field(description="The incumbent's share, %.")


class GateOutcome(StatusModel):
    decision: GateDecision = Field(description="Full, Canary or Reject.")
    message: str | None = Field(None, description="Why (status.gate.message).")


class NotificationPayload(StatusModel):
    """One transition of one rollout, as sent to a webhook receiver (camelCase JSON)."""

    key: Annotated[str, StringConstraints(min_length=1)] = Field(
        description="The idempotency key, `<uid>/<transition>/<sequence>`: the same for every delivery of "
        "this transition (retries, an operator restart), different for every other. Drop repeats by it."
    )
    transition: Transition = Field(description="What happened: GateDecided, RolledBack, Paused, ...")
    at: Timestamp = Field(description="When the operator decided it.")
    name: str = Field(description="The ModelRollout's name (as Flagger's payload).")
    namespace: str = Field(description="Its namespace (as Flagger's payload).")
    uid: str = Field(description="Its metadata.uid.")
    phase: Phase | None = Field(description="status.phase after the transition (as Flagger's payload).")
    checksum: str = Field(
        description="A hash of the spec the transition was decided on: two notifications with the same "
        "checksum are about the same configuration (as Flagger's payload)."
    )
    metadata: dict[str, str] = Field(
        description="Flagger's free-form map: eventType (Normal or Warning), eventMessage, candidate, "
        "incumbent."
    )
    message: str | None = Field(None, description="status.message: what the operator is doing or waits for.")
    candidate: str = Field(description="The candidate's Deployment or inferencepool/<name>.")
    incumbent: str = Field(description="The incumbent's Deployment or inferencepool/<name>.")
    step: int = Field(description="status.currentStepIndex: the step, or the number of steps once all ran.")
    steps: int = Field(description="How many steps spec.steps has.")
    weights: Weights = Field(description="The weights the operator last asked the route for.")
    rollback_reason: RollbackReason | None = Field(
        None,
        description="status.rollbackReason: the message, the metric, its value and threshold, the rule, "
        "the incumbent's value, the query and the exemplar traces behind the breach.",
    )
    gate: GateOutcome | None = Field(None, description="The gate's decision, once it has one.")
    pause: RolloutPause | None = Field(None, description="status.pause: what holds the rollout, if anything.")
