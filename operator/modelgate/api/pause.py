"""ModelRollout.status.pause: why a rollout is held, as data.

ModelRollout.status.pause: why a rollout is held, as data (as Argo Rollouts' status.pauseConditions),
so that `modelgate resume`, `promote` and `abort` switch on it and a reader needs no condition reason."""

from enum import StrEnum
from typing import Annotated

from pydantic import Field, StringConstraints

from modelgate.api.statusmodel import StatusModel, Timestamp


class PauseReason(StrEnum):
    """What holds the rollout, and so what ends the hold."""

    PROMETHEUS_ERRORS = "PrometheusErrors"  # onPrometheusError pause: until `modelgate resume`
    PENDING_DEADLINE = "PendingDeadline"  # progressDeadlines.pending, action pause: until resume
    INCONCLUSIVE_DEADLINE = "InconclusiveDeadline"  # progressDeadlines.inconclusive: until resume
    ROUTE_CONFLICT = "RouteConflict"  # another writer changed the weights twice: until resume
    INDEFINITE_STEP = "IndefiniteStep"  # a pause step without a duration: until `modelgate promote`
    ROLLBACK_HELD = "RollbackHeld"  # a rollback in the watch window waits for the incumbent
    # Another rollout owns the route rule (status.routeOwner), or left it on a backend that is not
    # spec.incumbent: nothing is written, not even a rollback's 0, until that ends by itself.
    ROUTE_CLAIMED = "RouteClaimed"
    # spec.policyRef names a policy that is not there or does not resolve: weight 0 until it does.
    POLICY_UNRESOLVED = "PolicyUnresolved"

    @property
    def deadline(self) -> bool:
        return self in (PauseReason.PENDING_DEADLINE, PauseReason.INCONCLUSIVE_DEADLINE)


RESUMABLE = frozenset(
    {
        PauseReason.PROMETHEUS_ERRORS,
        PauseReason.PENDING_DEADLINE,
        PauseReason.INCONCLUSIVE_DEADLINE,
        PauseReason.ROUTE_CONFLICT,
    }
)
"""The pauses `modelgate resume` ends."""


class RolloutPause(StatusModel):
    """Why the rollout is held: no step advances (and with RouteConflict no weight is written, but a
    rollback's) until what the reason names ends it."""

    reason: PauseReason = Field(
        description="PrometheusErrors, PendingDeadline, InconclusiveDeadline or RouteConflict (until "
        "`modelgate resume`), IndefiniteStep (until `modelgate promote`), or RollbackHeld (a rollback in "
        "the watch window waiting for the incumbent to be Available), or RouteClaimed (another rollout owns "
        "the route rule, status.routeOwner, or left it on a backend other than spec.incumbent: nothing is "
        "written until that ends), or PolicyUnresolved (spec.policyRef names a policy that is missing or "
        "does not resolve to a valid plan: the candidate stays at weight 0 until it does)."
    )
    since: Timestamp = Field(description="When the pause began.")
    message: Annotated[str, StringConstraints(max_length=1024)] = Field(
        description="What caused it and what ends it."
    )
    metrics_without_events: Annotated[
        tuple[Annotated[str, StringConstraints(max_length=63), Field(description="A metric's name.")], ...],
        Field(max_length=64),
    ] = Field(
        (),
        description="At an InconclusiveDeadline: the Inconclusive metrics whose counts hold no event on "
        "either side, so that a ratio margin (sequential.margin) cannot be shown however long the step "
        "waits; sequential.marginIncrease can be (docs/statistics.md).",
    )
