"""One side of a rollout in ModelRollout.spec: the Deployment or InferencePool it names."""

from typing import Literal, Self

from pydantic import ConfigDict, Field, model_validator

from modelgate.api.errors import FieldPathError
from modelgate.api.fields import ModelName, ObjectName, PodRegex
from modelgate.api.group_members import MEMBERS_DESCRIPTION, Members, check_unique_roles, unique_roles_rule
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.specmodel import SpecModel

BackendKind = Literal["Deployment", "InferencePool"]
ADAPTER_ON_POOL = "an adapter is served by an InferencePool: set inferencePool too"


class WorkloadRef(SpecModel):
    """One side of the rollout: a Deployment, or an InferencePool (inference.networking.k8s.io/v1)."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "has(self.deployment) != has(self.inferencePool)",
                message="set exactly one of deployment or inferencePool",
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
        "the Deployment's own pods, or for an InferencePool to the Pods its selector selects (by their "
        "ReplicaSets' name prefixes); set it when pods are named otherwise. Quotes, braces and "
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
        if (self.deployment is None) == (self.inference_pool is None):
            raise ValueError("set exactly one of deployment or inferencePool")
        if self.adapter is not None and self.inference_pool is None:
            raise FieldPathError("adapter", ADAPTER_ON_POOL)
        check_unique_roles(self.members)
        return self

    @property
    def reported_model(self) -> str | None:
        """The model name the endpoint picker reports this side under, when not the workload's name."""
        return self.model if self.model is not None else self.adapter

    @property
    def kind(self) -> BackendKind:
        return "Deployment" if self.deployment is not None else "InferencePool"

    @property
    def name(self) -> str:
        """The Deployment's or the InferencePool's name."""
        name = self.deployment if self.deployment is not None else self.inference_pool
        assert name is not None  # _exactly_one_workload
        return name

    @property
    def identity(self) -> str:
        """What status.rolloutCandidate records: a Deployment's name (as it did before pools), and
        `inferencepool/<name>` for a pool, so that a change of kind alone is a new rollout too, and
        `inferencepool/<name>/adapter/<adapter>` for an adapter, so that a new adapter is one too."""
        if self.deployment is not None:
            return self.name
        pool = f"inferencepool/{self.name}"
        return pool if self.adapter is None else f"{pool}/adapter/{self.adapter}"

    @property
    def field(self) -> str:
        """The spec key that names the workload: `deployment` or `inferencePool`."""
        return "deployment" if self.deployment is not None else "inferencePool"
