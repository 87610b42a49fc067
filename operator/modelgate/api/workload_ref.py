"""One side of a rollout in ModelRollout.spec: the Deployment or InferencePool it names."""

from typing import Literal, Self

from pydantic import ConfigDict, Field, model_validator

from modelgate.api.fields import ModelName, ObjectName, PodRegex
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.specmodel import SpecModel

BackendKind = Literal["Deployment", "InferencePool"]


class WorkloadRef(SpecModel):
    """One side of the rollout: a Deployment, or an InferencePool (inference.networking.k8s.io/v1)."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "has(self.deployment) != has(self.inferencePool)",
                message="set exactly one of deployment or inferencePool",
            )
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
        "`target_model_name` label, read by presets with source llm-d. Defaults to the Deployment's "
        "or InferencePool's name.",
    )

    @model_validator(mode="after")
    def _exactly_one_workload(self) -> Self:
        if (self.deployment is None) == (self.inference_pool is None):
            raise ValueError("set exactly one of deployment or inferencePool")
        return self

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
        `inferencepool/<name>` for a pool, so that a change of kind alone is a new rollout too."""
        return self.name if self.deployment is not None else f"inferencepool/{self.name}"

    @property
    def field(self) -> str:
        """The spec key that names the workload: `deployment` or `inferencePool`."""
        return "deployment" if self.deployment is not None else "inferencePool"
