"""One side of a rollout in ModelRollout.spec: the Deployment, InferencePool or workload it names."""

from typing import Literal, Self

from pydantic import ConfigDict, Field, model_validator

from modelgate.api.errors import FieldPathError
from modelgate.api.fields import ModelName, ObjectName, PodRegex
from modelgate.api.group_members import MEMBERS_DESCRIPTION, Members, check_unique_roles, unique_roles_rule
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.specmodel import SpecModel
from modelgate.api.workload_object import WorkloadObjectRef

# How a router reaches a side: "Deployment" through a Service (any workload's Pods are), an
# InferencePool through the pool itself.
BackendKind = Literal["Deployment", "InferencePool"]
# The longest identity (WorkloadRef.identity): a kind (63), a group (253) and a name (253) with the
# two characters between them; a pool's adapter form is shorter (inferencepool/ + 253 + /adapter/ + 253).
IDENTITY_MAX = 63 + 1 + 253 + 1 + 253
ADAPTER_ON_POOL = "an adapter is served by an InferencePool: set inferencePool too"
EXACTLY_ONE_WORKLOAD = "set exactly one of deployment, inferencePool or workload"
POOL_AS_WORKLOAD = "an InferencePool is not a workload: name it in inferencePool"
DEPLOYMENT_API_VERSION = "apps/v1"


class WorkloadRef(SpecModel):
    """One side of the rollout: a Deployment, an InferencePool (inference.networking.k8s.io/v1), or
    any workload (a StatefulSet, a LeaderWorkerSet, any kind with a scale subresource)."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "(has(self.deployment) ? 1 : 0) + (has(self.inferencePool) ? 1 : 0) "
                "+ (has(self.workload) ? 1 : 0) == 1",
                message=EXACTLY_ONE_WORKLOAD,
            ),
            CelRule(
                "!has(self.workload) || self.workload.kind != 'InferencePool'",
                field_path=".workload.kind",
                message=POOL_AS_WORKLOAD,
            ),
            CelRule(
                "!has(self.adapter) || has(self.inferencePool)",
                field_path=".adapter",
                message=ADAPTER_ON_POOL,
            ),
            unique_roles_rule(),
        )
    )

    deployment: ObjectName | None = Field(
        None, description="Name of a Deployment in the ModelRollout's namespace."
    )
    inference_pool: ObjectName | None = Field(
        None,
        alias="inferencePool",
        description="Name of an InferencePool (inference.networking.k8s.io/v1) in the ModelRollout's "
        "namespace: this side is the Pods its selector selects, and the route's backendRef for it is "
        "that InferencePool.",
    )
    workload: WorkloadObjectRef | None = Field(
        None,
        description="Any workload in the ModelRollout's namespace, by apiVersion, kind and name: "
        "apps/v1 Deployment (as `deployment` says it shorter) or StatefulSet, "
        "leaderworkerset.x-k8s.io/v1 LeaderWorkerSet (its leader Pods serve), or any kind with a "
        "scale subresource whose status names a Pod selector (the operator's RBAC must grant it: "
        "the chart's rbac.extraWorkloads). Reached through a Service, like a Deployment.",
    )
    adapter: ModelName | None = Field(
        None,
        description="A LoRA adapter (or model name) that the InferencePool serves: this side is the "
        "requests an InferenceModelRewrite sends to it (spec.trafficRouting.inferenceModelRewrite), "
        "and its metrics are the endpoint picker's series for that model (source llm-d).",
    )
    # None means the default (modelgate.metrics.context.default_pod_regex, or the pool's Pods).
    pod_regex: PodRegex | None = Field(
        None,
        description="Regular expression (RE2, fully anchored) matched against the `pod` label to pick "
        "this side's metric series. Defaults to `<deployment>-[a-z0-9]+-[a-z0-9]+`, the names of "
        "the Deployment's own pods; for a StatefulSet `<name>-[0-9]+`; for a LeaderWorkerSet its "
        "leader Pods, `<name>-[0-9]+`; for an InferencePool, or a workload of another kind, the Pods "
        "its selector selects (by their owners' name prefixes); set it when pods are named otherwise. "
        "Quotes, braces and "
        "backslashes are not allowed, so the value can be placed inside a PromQL label matcher as is.",
    )
    # None means the workload's name.
    model: ModelName | None = Field(
        None,
        description="The model name a gateway reports this side's requests under: the endpoint picker's "
        "`target_model_name` label, read by presets with source llm-d. Defaults to the adapter, or "
        "the Deployment's or InferencePool's name.",
    )

    members: Members | None = Field(None, description=MEMBERS_DESCRIPTION)

    @model_validator(mode="after")
    def _exactly_one_workload(self) -> Self:
        named = (self.deployment, self.inference_pool, self.workload)
        if sum(value is not None for value in named) != 1:
            raise ValueError(EXACTLY_ONE_WORKLOAD)
        if self.workload is not None and self.workload.kind == "InferencePool":
            raise FieldPathError("workload.kind", POOL_AS_WORKLOAD)
        if self.adapter is not None and self.inference_pool is None:
            raise FieldPathError("adapter", ADAPTER_ON_POOL)
        check_unique_roles(self.members)
        return self

    @property
    def reported_model(self) -> str | None:
        """The model name the endpoint picker reports this side under, when not the workload's name."""
        return self.model if self.model is not None else self.adapter

    @property
    def object_ref(self) -> WorkloadObjectRef | None:
        """The workload this side is (a `deployment` as apps/v1 Deployment); None for a pool."""
        if self.deployment is not None:
            return WorkloadObjectRef(
                api_version=DEPLOYMENT_API_VERSION, kind="Deployment", name=self.deployment
            )
        return self.workload

    @property
    def is_deployment(self) -> bool:
        """An apps/v1 Deployment, named by `deployment` or by `workload`."""
        ref = self.object_ref
        return ref is not None and (ref.api_version, ref.kind) == (DEPLOYMENT_API_VERSION, "Deployment")

    @property
    def kind(self) -> str:
        """The workload's kind (Deployment, StatefulSet, LeaderWorkerSet, ...) or InferencePool."""
        ref = self.object_ref
        return "InferencePool" if ref is None else ref.kind

    @property
    def backend_kind(self) -> BackendKind:
        """How a router reaches this side: a pool as itself, any workload through a Service."""
        return "InferencePool" if self.inference_pool is not None else "Deployment"

    @property
    def name(self) -> str:
        """The workload's or the InferencePool's name."""
        ref = self.object_ref
        if ref is not None:
            return ref.name
        assert self.inference_pool is not None  # _exactly_one_workload
        return self.inference_pool

    @property
    def identity(self) -> str:
        """What status.rolloutCandidate records: a Deployment's name (as it did before pools and
        workloads), `<kind>.<group>/<name>` for another workload (`statefulset.apps/<name>`), and
        `inferencepool/<name>` for a pool, so that a change of kind alone is a new rollout too, and
        `inferencepool/<name>/adapter/<adapter>` for an adapter, so that a new adapter is one too."""
        ref = self.object_ref
        if self.is_deployment:
            return self.name
        if ref is not None:
            group = ref.api_version.rpartition("/")[0]
            return f"{ref.kind.lower()}{'.' if group else ''}{group}/{ref.name}"
        pool = f"inferencepool/{self.name}"
        return pool if self.adapter is None else f"{pool}/adapter/{self.adapter}"

    @property
    def field(self) -> str:
        """The spec key that names the workload: `deployment`, `inferencePool` or `workload`."""
        if self.deployment is not None:
            return "deployment"
        return "inferencePool" if self.inference_pool is not None else "workload"
