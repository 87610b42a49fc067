"""ModelRollout.spec as frozen pydantic models, from which `make generate` writes the CRD's schema.

Field names, bounds, patterns, defaults, descriptions and CEL rules are declared here once; the
validators repeat the CEL rules, so a spec that did not pass through the API server (tests, the CLI,
an older CRD) gets the same answers.
"""

from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import (
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from modelgate.api.analysis import AnalysisSpec
from modelgate.api.candidate_patch import CandidatePatch
from modelgate.api.errors import FieldPathError, InvalidSpecError
from modelgate.api.gate import GateSpec
from modelgate.api.group_members import (
    SHARED_WORKLOAD,
    role_differences,
    same_roles_rule,
    shared_workload_rules,
)
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.notifications import NotificationsSpec
from modelgate.api.one_edit import ONE_EDIT_RULES, with_candidate, with_generated_candidate
from modelgate.api.policy_ref import PolicyRef
from modelgate.api.progress_deadlines import ProgressDeadlines
from modelgate.api.rollback_policy import RollbackSpec
from modelgate.api.safety import CapacitySpec
from modelgate.api.specmodel import SpecModel
from modelgate.api.steps import Step
from modelgate.api.traffic_routing import TrafficRouting
from modelgate.api.watch import WatchSpec
from modelgate.api.workload_ref import WorkloadRef


def _sides_differ(kind: str) -> CelRule:
    return CelRule(
        f"!has(self.candidate.{kind}) || !has(self.incumbent.{kind}) "
        f"|| self.candidate.{kind} != self.incumbent.{kind}",
        field_path=f".candidate.{kind}",
        message_expression=f"'must differ from spec.incumbent.{kind} (both are ' "
        f"+ self.incumbent.{kind} + ')'",
    )


def _workloads_differ() -> tuple[CelRule, ...]:
    # `deployment: x` is apps/v1 Deployment x: the two spellings of one Deployment are one side.
    both = CelRule(
        "!has(self.candidate.workload) || !has(self.incumbent.workload) "
        "|| self.candidate.workload.kind != self.incumbent.workload.kind "
        "|| self.candidate.workload.name != self.incumbent.workload.name",
        field_path=".candidate.workload",
        message_expression="'must differ from spec.incumbent.workload (both are ' "
        "+ self.incumbent.workload.kind + ' ' + self.incumbent.workload.name + ')'",
    )

    def spelled_apart(workload_side: str, deployment_side: str, field: str, other: str) -> CelRule:
        return CelRule(
            f"!has(self.{workload_side}.workload) || !has(self.{deployment_side}.deployment) "
            f"|| self.{workload_side}.workload.kind != 'Deployment' "
            f"|| self.{workload_side}.workload.name != self.{deployment_side}.deployment",
            field_path=f".candidate.{field}",
            message_expression=f"'must differ from spec.incumbent.{other} (both are Deployment ' "
            f"+ self.{deployment_side}.deployment + ')'",
        )

    return (
        both,
        spelled_apart("candidate", "incumbent", "workload", "deployment"),
        spelled_apart("incumbent", "candidate", "deployment", "workload"),
    )


def _pools_differ() -> CelRule:
    # Two adapters of one pool are two sides; two sides of one pool without adapters are the same.
    return CelRule(
        "!has(self.candidate.inferencePool) || !has(self.incumbent.inferencePool) "
        "|| self.candidate.inferencePool != self.incumbent.inferencePool "
        "|| has(self.candidate.adapter) || has(self.incumbent.adapter)",
        field_path=".candidate.inferencePool",
        message_expression="'must differ from spec.incumbent.inferencePool (both are ' "
        "+ self.incumbent.inferencePool + ')'",
    )


def _pool_is_backend(side: str) -> CelRule:
    # An InferencePool backendRef names the pool itself, so the backend can be no other name.
    return CelRule(
        f"!has(self.trafficRouting.gatewayAPI) || !has(self.{side}.inferencePool) "
        f"|| self.trafficRouting.gatewayAPI.{side}Backend == self.{side}.inferencePool",
        field_path=f".trafficRouting.gatewayAPI.{side}Backend",
        message_expression=f"'must be ' + self.{side}.inferencePool + ', the InferencePool of "
        f"spec.{side}.inferencePool'",
    )


POOLS_NEED_GATEWAY_API = (
    "an InferencePool side needs the gatewayAPI router: a VirtualService's destinations are Services"
)
START_PAST_THE_STEPS = "must be the index of one of spec.steps: a full release never skips the canary"
WATCH_NEEDS_ANALYSIS = "a watch window needs spec.analysis: its metrics are read from that Prometheus"
ADAPTERS_NEED_MODEL_REWRITE = (
    "an adapter side needs the inferenceModelRewrite router: a route's backendRef reaches a pool, "
    "not an adapter"
)
MODEL_REWRITE_NEEDS_ADAPTERS = (
    "moves weights between two adapters of one InferencePool: set spec.incumbent.adapter and "
    "spec.candidate.adapter, with the same inferencePool"
)
SCALE_DOWN_NEEDS_DEPLOYMENT = (
    "scaleDownIncumbent needs spec.incumbent.deployment, workload or members: an InferencePool "
    "has no replicas"
)
ROLE_NEEDS_MEMBER = "names a role that spec.candidate.members does not have"
STEPS_OR_POLICY = "is required unless spec.policyRef names a policy that holds the steps"


class ModelRolloutSpec(SpecModel):
    """The desired rollout."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            *with_candidate(
                _sides_differ("deployment"),
                *_workloads_differ(),
                _pools_differ(),
                _sides_differ("adapter"),
                CelRule(
                    "!(has(self.incumbent.adapter) || has(self.candidate.adapter)) "
                    "|| has(self.trafficRouting.inferenceModelRewrite)",
                    field_path=".trafficRouting",
                    message=ADAPTERS_NEED_MODEL_REWRITE,
                ),
                CelRule(
                    "!has(self.trafficRouting.inferenceModelRewrite) || (has(self.incumbent.adapter) "
                    "&& has(self.candidate.adapter) && has(self.incumbent.inferencePool) "
                    "&& has(self.candidate.inferencePool) "
                    "&& self.incumbent.inferencePool == self.candidate.inferencePool)",
                    field_path=".trafficRouting.inferenceModelRewrite",
                    message=MODEL_REWRITE_NEEDS_ADAPTERS,
                ),
                _pool_is_backend("candidate"),
            ),
            _pool_is_backend("incumbent"),
            *ONE_EDIT_RULES,
            CelRule(
                "!has(self.trafficRouting.istio) || "
                "!(has(self.incumbent.inferencePool) || has(self.candidate.inferencePool))",
                field_path=".trafficRouting.istio",
                message=POOLS_NEED_GATEWAY_API,
            ),
            CelRule("has(self.steps) || has(self.policyRef)", field_path=".steps", message=STEPS_OR_POLICY),
            CelRule(
                "!has(self.watch) || has(self.analysis) || has(self.policyRef)",
                field_path=".watch",
                message=WATCH_NEEDS_ANALYSIS,
            ),
            CelRule(
                "!has(self.watch) || !has(self.watch.scaleDownIncumbent) || !self.watch.scaleDownIncumbent "
                "|| has(self.incumbent.deployment) || has(self.incumbent.workload) "
                "|| has(self.incumbent.members)",
                field_path=".watch.scaleDownIncumbent",
                message=SCALE_DOWN_NEEDS_DEPLOYMENT,
            ),
            CelRule(
                "!has(self.gate) || !has(self.gate.full) || !has(self.gate.full.startAtStep) "
                "|| !has(self.steps) || self.gate.full.startAtStep < size(self.steps)",
                field_path=".gate.full.startAtStep",
                message=START_PAST_THE_STEPS,
            ),
            *with_candidate(
                same_roles_rule(),
                *shared_workload_rules(),
                CelRule(
                    "!has(self.analysis) || self.analysis.metrics.all(m, !has(m.role) "
                    "|| (has(self.candidate.members) && self.candidate.members.exists(x, x.role == m.role)))",
                    field_path=".analysis.metrics",
                    message="a metric's role must be one of spec.candidate.members' roles",
                ),
            ),
        )
    )

    incumbent: WorkloadRef = Field(
        description="The Deployment, InferencePool or workload serving today; it takes back all traffic "
        "on rollback."
    )
    # Absent with candidatePatch, and then filled in before validation with the Deployment the operator
    # generates (api/one_edit.py): never None once parsed, so it is typed as always set.
    candidate: WorkloadRef = Field(  # type: ignore[assignment]
        None,
        description="The Deployment, InferencePool or workload being rolled out; must differ from the "
        "incumbent. Changing it starts a new rollout from step 0. Set exactly one of candidate or "
        "candidatePatch.",
    )
    candidate_patch: CandidatePatch | None = Field(
        None,
        description="One edit per upgrade (docs/topologies/one-edit.md): instead of naming a candidate, "
        "say how it differs from the incumbent Deployment; the operator generates the candidate "
        "Deployment and Service from the incumbent, adds its backendRef at weight 0 to the route, and "
        "removes them on rollback or deletion. A changed patch is a new candidate and a new rollout.",
    )
    traffic_routing: TrafficRouting = Field(
        description="How traffic is split between the two sides. Set exactly one router."
    )
    steps: Annotated[tuple[Step, ...], Field(min_length=1, max_length=50)] = Field(
        default_factory=tuple,
        description="What to do, in order. Weights move only as these steps say, or to 0 on rollback. "
        "After the last step the candidate is promoted: it gets 100% of the traffic, and the rollout "
        "Succeeds (with spec.watch, once the window at 100% has passed). Required unless spec.policyRef "
        "names a policy that holds them.",
    )
    analysis: AnalysisSpec | None = Field(
        None,
        description="Metrics that gate every step. Without analysis the steps advance on time and manual "
        "promotion alone.",
    )
    rollback: RollbackSpec = Field(
        # A factory, not a value, so that the CRD has no default: the API server would write `{}`
        # into every rollout, and a rollout's section would always replace its policy's.
        default_factory=RollbackSpec,
        description="What happens when the metrics cannot be read, how a rollback moves the weight, and "
        "what deleting the rollout does.",
    )
    progress_deadlines: ProgressDeadlines | None = Field(
        None, description="What to do when a rollout stays Pending or Inconclusive too long."
    )
    capacity: CapacitySpec | None = Field(
        None, description="Whether a step waits for the candidate's Ready replicas before raising its weight."
    )
    gate: GateSpec | None = Field(
        None,
        description="Checks that judge the candidate before it gets any traffic (docs/gate.md): run once "
        "it is Available, before step 0; they decide a full release, a canary (the steps) or a "
        "rejection (phase Failed, no traffic ever).",
    )
    watch: WatchSpec | None = Field(
        None,
        description="A window after the last step in which the candidate takes all traffic and the "
        "analysis goes on; a breach in it rolls back (docs/watch-window.md).",
    )
    notifications: NotificationsSpec | None = Field(
        None,
        description="Who is told when the rollout reaches a transition (docs/notifications.md); absent: "
        "the operator's defaults (the chart's notifications.defaults), if any.",
    )

    policy_ref: PolicyRef | None = Field(
        None,
        description="A ModelRolloutPolicy or ClusterModelRolloutPolicy whose sections (steps, analysis, "
        "gate, rollback, progressDeadlines, capacity, watch, notifications) this rollout takes where it "
        "sets none of its own: a section set here replaces the policy's whole (docs/policies.md). The "
        "policy is pinned in status.policy when the rollout starts.",
    )

    @model_validator(mode="after")
    def _steps_or_policy(self) -> Self:
        if not self.steps and self.policy_ref is None:
            raise FieldPathError("steps", STEPS_OR_POLICY)
        return self

    @model_validator(mode="before")
    @classmethod
    def _candidate_from_patch(cls, data: Any) -> Any:
        return with_generated_candidate(data)

    @model_validator(mode="after")
    def _candidate_differs(self) -> Self:
        incumbent, candidate = self.incumbent, self.candidate
        adapters = candidate.adapter is not None or incumbent.adapter is not None  # told apart below
        if candidate.kind == incumbent.kind and candidate.name == incumbent.name and not adapters:
            raise FieldPathError(
                f"candidate.{candidate.field}",
                f"must differ from spec.incumbent.{incumbent.field} "
                f"(both are {_named(incumbent, candidate)})",
            )
        return self

    @model_validator(mode="after")
    def _adapters_are_rewritten(self) -> Self:
        incumbent, candidate = self.incumbent, self.candidate
        adapters = incumbent.adapter is not None or candidate.adapter is not None
        if adapters and incumbent.adapter == candidate.adapter:
            raise FieldPathError(
                "candidate.adapter", f"must differ from spec.incumbent.adapter (both are {incumbent.adapter})"
            )
        rewrite = self.traffic_routing.inference_model_rewrite is not None
        if adapters and not rewrite:
            raise FieldPathError("trafficRouting", ADAPTERS_NEED_MODEL_REWRITE)
        one_pool = (
            incumbent.inference_pool is not None and incumbent.inference_pool == candidate.inference_pool
        )
        if rewrite and not (incumbent.adapter and candidate.adapter and one_pool):
            raise FieldPathError("trafficRouting.inferenceModelRewrite", MODEL_REWRITE_NEEDS_ADAPTERS)
        return self

    @model_validator(mode="after")
    def _pools_are_backends(self) -> Self:
        routing = self.traffic_routing.gateway_api
        if routing is None:
            pools = self.incumbent.inference_pool is not None or self.candidate.inference_pool is not None
            if pools and self.traffic_routing.istio is not None:
                raise FieldPathError("trafficRouting.istio", POOLS_NEED_GATEWAY_API)
            return self
        for side, ref, backend in (
            ("incumbent", self.incumbent, routing.incumbent_backend),
            ("candidate", self.candidate, routing.candidate_backend),
        ):
            if ref.inference_pool is not None and backend != ref.inference_pool:
                raise FieldPathError(
                    f"trafficRouting.gatewayAPI.{side}Backend",
                    f"must be {ref.inference_pool}, the InferencePool of spec.{side}.inferencePool",
                )
        return self

    @model_validator(mode="after")
    def _watch_is_usable(self) -> Self:
        watch = self.watch
        if watch is not None and self.analysis is None and self.policy_ref is None:
            raise FieldPathError("watch", WATCH_NEEDS_ANALYSIS)
        grouped = self.incumbent.members is not None
        if (
            watch is not None
            and watch.scale_down_incumbent
            and self.incumbent.inference_pool is not None
            and not grouped
        ):
            raise FieldPathError("watch.scaleDownIncumbent", SCALE_DOWN_NEEDS_DEPLOYMENT)
        return self

    @model_validator(mode="after")
    def _groups_match(self) -> Self:
        difference = role_differences(self.incumbent.members, self.candidate.members)
        if difference:
            raise FieldPathError("candidate.members", difference)
        shared = sorted(_workloads(self.incumbent) & _workloads(self.candidate))
        if shared and (self.incumbent.members or self.candidate.members):
            kind, name = shared[0]
            members = {(member.kind, member.name) for member in self.candidate.members or ()}
            field = "candidate.members" if shared[0] in members else f"candidate.{self.candidate.field}"
            raise FieldPathError(field, f"{kind} {name} {SHARED_WORKLOAD}")
        roles = {member.role for member in self.candidate.members or ()}
        for index, metric in enumerate(self.analysis.metrics if self.analysis else ()):
            if metric.role is not None and metric.role not in roles:
                raise FieldPathError(f"analysis.metrics[{index}].role", f"{metric.role} {ROLE_NEEDS_MEMBER}")
        return self

    @model_validator(mode="after")
    def _gate_starts_at_a_step(self) -> Self:
        start = self.gate.full.start_at_step if self.gate is not None else None
        if start is not None and self.steps and start >= len(self.steps):
            raise FieldPathError("gate.full.startAtStep", START_PAST_THE_STEPS)
        return self


def _workloads(side: WorkloadRef) -> set[tuple[str, str]]:
    """The (kind, name) of every workload of the side: its own (a pool is not one) and its members'."""
    own = set() if side.inference_pool is not None else {(side.kind, side.name)}
    return own | {(member.kind, member.name) for member in side.members or ()}


def _named(side: WorkloadRef, other: WorkloadRef) -> str:
    """A side by name, and by kind too where a workload (of any kind) is named."""
    spelled = {side.field, other.field}
    return f"{side.kind} {side.name}" if "workload" in spelled else side.name


def parse_spec(spec: Mapping[str, Any]) -> ModelRolloutSpec:
    """Validate a ModelRollout's spec; InvalidSpecError lists each problem as `spec.<path>: <reason>`."""
    try:
        return ModelRolloutSpec.model_validate(spec)
    except ValidationError as error:
        raise InvalidSpecError.from_validation_error(error, root="spec") from None
