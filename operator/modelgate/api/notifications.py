"""spec.notifications (who is told of which transitions) and status.notifications (not yet sent).

spec.notifications: who is told when a rollout reaches a transition (docs/notifications.md), and
status.notifications: the transitions not yet delivered, kept in status so that an operator restarted
between a transition and its delivery still delivers it (at least once; the key lets a receiver
drop a repeat)."""

from enum import StrEnum
from typing import Annotated, Self

from pydantic import Field, model_validator

from modelgate.api.analysis import SecretKeyRef
from modelgate.api.bounds import EXACT_INT_MAX, Counted
from modelgate.api.errors import FieldPathError
from modelgate.api.fields import MetricName
from modelgate.api.markers import JsonDict, list_map
from modelgate.api.specmodel import SpecModel
from modelgate.api.statusmodel import StatusModel, Timestamp


class Transition(StrEnum):
    """A moment of a rollout that may notify."""

    GATE_DECIDED = "GateDecided"  # the gate decided: Full, Canary or Reject
    ROLLED_BACK = "RolledBack"
    PAUSED = "Paused"  # a hold began (status.pause), a deadline's included
    SUCCEEDED = "Succeeded"
    DEADLINE = "Deadline"  # a progress deadline passed (paused, rolled back or failed by it)
    FAILED = "Failed"  # a configuration that cannot work, e.g. the route is gone
    STEP_STARTED = "StepStarted"


DEFAULT_TRANSITIONS = (
    Transition.GATE_DECIDED,
    Transition.ROLLED_BACK,
    Transition.PAUSED,
    Transition.SUCCEEDED,
    Transition.DEADLINE,
)


class ReceiverKind(StrEnum):
    WEBHOOK = "webhook"  # the JSON payload of docs/notifications.md
    SLACK = "slack"  # a Slack incoming webhook: text and blocks
    MSTEAMS = "msteams"  # an MS Teams incoming webhook: a MessageCard


_SET: JsonDict = {"x-kubernetes-list-type": "set"}


class Receiver(SpecModel):
    """One place to tell: its kind, and the Secret key that holds its URL."""

    name: MetricName = Field(
        description="The receiver's name, unique in the list; metrics and Events name it."
    )
    kind: ReceiverKind = Field(
        description="webhook (the JSON payload of docs/notifications.md), slack (an incoming webhook) or "
        "msteams (an incoming webhook; 200 and 202 are both taken as delivered)."
    )
    url_secret_ref: SecretKeyRef = Field(
        description="The Secret key, in the ModelRollout's namespace, holding the receiver's URL (a "
        "webhook URL is a credential: it is never logged). The operator may read only the Secrets the "
        "chart names (rbac.notificationSecrets); the URL is held to the same egress policy as every "
        "tenant address (no metadata, link-local or API server address)."
    )


class NotificationsSpec(SpecModel):
    """Who is told, and at which transitions. Set, it replaces the operator's defaults (the chart's
    notifications.defaults) whole; `receivers: []` turns them off for this rollout."""

    receivers: Annotated[tuple[Receiver, ...], Field(max_length=10)] = Field(
        description="Where each notification goes, names unique; each is delivered on its own, with "
        "retries and backoff, never delaying a route write.",
        json_schema_extra=list_map("name"),
    )
    on: Annotated[tuple[Transition, ...], Field(max_length=len(Transition))] = Field(
        DEFAULT_TRANSITIONS,
        description="The transitions that notify, each at most once: GateDecided, RolledBack, Paused, "
        "Succeeded, Deadline, Failed, StepStarted. Absent: GateDecided, RolledBack, Paused, Succeeded "
        "and Deadline.",
        json_schema_extra=_SET,
    )

    @model_validator(mode="after")
    def _unique(self) -> Self:
        names = [receiver.name for receiver in self.receivers]
        for index, name in enumerate(names):
            if name in names[:index]:
                raise FieldPathError(f"receivers[{index}].name", f"duplicate name {name!r}")
        for index, transition in enumerate(self.on):
            if transition in self.on[:index]:
                raise FieldPathError(f"on[{index}]", f"duplicate transition {transition.value}")
        return self


class PendingNotification(StatusModel):
    """A transition decided and not yet delivered to every receiver (or given up on)."""

    transition: Transition = Field(description="The transition to tell.")
    sequence: Annotated[int, Field(ge=1, le=EXACT_INT_MAX)] = Field(
        description="Its number among the transitions this object noted; with the object's uid and the "
        "transition, the notification's idempotency key."
    )
    at: Timestamp = Field(description="When the transition was decided.")

    def key(self, uid: str) -> str:
        return f"{uid}/{self.transition.value}/{self.sequence}"


MAX_PENDING = 10  # a receiver that never answers is given up on long before; the oldest go first


class NotificationStatus(StatusModel):
    sequence: Counted = Field(
        0, description="How many transitions this object has noted for notification, over all its rollouts."
    )
    pending: Annotated[tuple[PendingNotification, ...], Field(max_length=MAX_PENDING)] = Field(
        (),
        description="The transitions not yet delivered to every receiver, the oldest first; one is "
        "removed once delivered or given up on (a NotificationFailed Event).",
    )
