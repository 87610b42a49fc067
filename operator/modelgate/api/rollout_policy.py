"""ModelRolloutPolicy and ClusterModelRolloutPolicy: a rollout's plan written once, named by spec.policyRef.

The policy's spec holds the sections of a ModelRollout's spec that judge a candidate (steps, analysis,
gate, rollback, progressDeadlines, capacity, watch, notifications), as the rollout's own models:
a section means the same in either object. api/policy_resolution.py merges the two; status.policy
pins what a rollout started with (PinnedPolicy).
"""

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from modelgate.api.analysis import AnalysisSpec
from modelgate.api.bounds import Counted
from modelgate.api.fields import ObjectName
from modelgate.api.gate import GateSpec
from modelgate.api.notifications import NotificationsSpec
from modelgate.api.policy_ref import PolicyKind
from modelgate.api.progress_deadlines import ProgressDeadlines
from modelgate.api.rollback_policy import RollbackSpec
from modelgate.api.safety import CapacitySpec
from modelgate.api.spec import ModelRolloutSpec
from modelgate.api.specmodel import SpecModel
from modelgate.api.statusmodel import StatusModel
from modelgate.api.steps import Step
from modelgate.api.watch import WatchSpec
from modelgate.api.workload_ref import IDENTITY_MAX

# The pinned policy spec's longest JSON: status stays far below etcd's object limit (1.5 MiB).
MAX_PINNED_SPEC = 65536
SPEC_HASH_LENGTH = 16


# The sections a policy may hold, by their field names in ModelRolloutSpec (and here).
POLICY_SECTIONS = (
    "steps",
    "analysis",
    "gate",
    "rollback",
    "progress_deadlines",
    "capacity",
    "watch",
    "notifications",
)


def _section(name: str) -> Any:
    # The description of ModelRolloutSpec's own field, said once there.
    field = ModelRolloutSpec.model_fields[name]
    return Field(None, description=f"The default of the rollout's spec.{field.alias}: {field.description}")


class ModelRolloutPolicySpec(SpecModel):
    """Defaults of a ModelRollout's plan. A rollout that names the policy (spec.policyRef) takes each
    section it does not set from here, whole: a section the rollout sets replaces the policy's."""

    steps: Annotated[tuple[Step, ...], Field(min_length=1, max_length=50)] | None = _section("steps")
    analysis: AnalysisSpec | None = _section("analysis")
    gate: GateSpec | None = _section("gate")
    rollback: RollbackSpec | None = _section("rollback")
    progress_deadlines: ProgressDeadlines | None = _section("progress_deadlines")
    capacity: CapacitySpec | None = _section("capacity")
    watch: WatchSpec | None = _section("watch")
    notifications: NotificationsSpec | None = _section("notifications")


class PinnedPolicy(StatusModel):
    """The policy a rollout started with, pinned: the rollout keeps deciding with this spec when the
    policy changes or goes, until `modelgate repin` or its next candidate."""

    kind: PolicyKind = Field(description="The policy's kind.")
    name: ObjectName = Field(description="The policy's name.")
    generation: Counted = Field(description="The policy's metadata.generation pinned.")
    candidate: Annotated[str, StringConstraints(max_length=IDENTITY_MAX)] = Field(
        description="The candidate the policy was pinned for (status.rolloutCandidate's form): a new "
        "candidate pins the policy as it is then."
    )
    spec: Annotated[str, StringConstraints(max_length=MAX_PINNED_SPEC)] = Field(
        description="The policy's spec as it was at that generation, as compact JSON: kept here rather "
        "than as an object so that status does not repeat the whole plan's schema."
    )
    resolved_hash: Annotated[str, StringConstraints(max_length=SPEC_HASH_LENGTH)] = Field(
        description="A hash (sha256, cut) of the plan in force: the rollout's spec resolved with the "
        "pinned policy. Two rollouts with the same hash follow the same plan."
    )
