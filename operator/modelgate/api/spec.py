"""ModelRollout.spec as frozen pydantic models, from which `make generate` writes the CRD's schema.

Field names, bounds, patterns, defaults, descriptions and CEL rules are declared here once; the
validators repeat the CEL rules, so a spec that did not pass through the API server (tests, the CLI,
an older CRD) gets the same answers.
"""

from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from modelgate.api.analysis import AnalysisSpec
from modelgate.api.duration import parse_duration
from modelgate.api.errors import FieldPathError, InvalidSpecError
from modelgate.api.fields import Duration, Integer, ModelName, ObjectName, PodRegex, PositiveDuration
from modelgate.api.markers import CelRule, JsonDict, cel_rules
from modelgate.api.safety import CapacitySpec, GradualRollback, OnDelete
from modelgate.api.specmodel import SpecModel

OnPrometheusError = Literal["pause", "rollback"]
DeadlineAction = Literal["pause", "rollback", "fail"]


class DeploymentRef(SpecModel):
    deployment: ObjectName = Field(description="Name of a Deployment in the ModelRollout's namespace.")
    # None means the default (modelgate.metrics.context.default_pod_regex).
    pod_regex: PodRegex | None = Field(
        None,
        description="Regular expression (RE2, fully anchored) matched against the `pod` label to pick "
        "this Deployment's metric series. Defaults to `<deployment>-[a-z0-9]+-[a-z0-9]+`, the names of "
        "the Deployment's own pods; set it when pods are named otherwise. Quotes, braces and "
        "backslashes are not allowed, so the value can be placed inside a PromQL label matcher as is.",
    )
    # None means the Deployment's name.
    model: ModelName | None = Field(
        None,
        description="The model name a gateway reports this side's requests under: the endpoint picker's "
        "`target_model_name` label, read by presets with source llm-d. Defaults to the Deployment's name.",
    )


class GatewayAPIRouting(SpecModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "self.candidateBackend != self.incumbentBackend",
                field_path=".candidateBackend",
                message="must differ from incumbentBackend",
            )
        )
    )

    http_route: ObjectName = Field(description="Name of the HTTPRoute.")
    rule_index: Annotated[Integer, Field(ge=0)] = Field(
        0, description="Index of the route rule whose backendRefs hold the two backends."
    )
    incumbent_backend: ObjectName = Field(
        description="backendRef name (usually a Service) that reaches the incumbent."
    )
    candidate_backend: ObjectName = Field(
        description="backendRef name (usually a Service) that reaches the candidate."
    )

    @model_validator(mode="after")
    def _backends_differ(self) -> Self:
        if self.candidate_backend == self.incumbent_backend:
            raise FieldPathError("candidateBackend", "must differ from incumbentBackend")
        return self


def _router_keys(model: type[BaseModel]) -> list[str]:
    return [str(field.alias) for field in model.model_fields.values()]


def _one_router_rule(schema: JsonDict, model: type[BaseModel]) -> None:
    # One has() per router field, so a new router is a new field and nothing else.
    keys = _router_keys(model)
    has_each = ", ".join(f"has(self.{key})" for key in keys)
    schema.update(
        cel_rules(
            CelRule(
                f"[{has_each}].exists_one(isSet, isSet)",
                message=f"exactly one router must be set; supported routers: {', '.join(keys)}",
            )
        )
    )


class TrafficRouting(SpecModel):
    # Exactly one router is set; a new router is one more optional field here.
    model_config = ConfigDict(json_schema_extra=_one_router_rule)

    gateway_api: GatewayAPIRouting | None = Field(
        default=None,
        alias="gatewayAPI",
        description="Split traffic by rewriting the backend weights of one rule of a Gateway API "
        "HTTPRoute in the ModelRollout's namespace.",
    )

    @model_validator(mode="after")
    def _exactly_one_router(self) -> Self:
        if len(self._set_router_keys()) != 1:
            supported = ", ".join(_router_keys(type(self)))
            raise ValueError(f"exactly one router must be set; supported routers: {supported}")
        return self

    @property
    def router_key(self) -> str:
        """The key of the router in use (e.g. "gatewayAPI"), by which routers are registered."""
        return self._set_router_keys()[0]

    def _set_router_keys(self) -> list[str]:
        fields = type(self).model_fields
        return [str(field.alias) for name, field in fields.items() if getattr(self, name) is not None]


class Pause(SpecModel):
    duration: Duration | None = Field(
        None, description="How long to pause, as a Go-style duration (30s, 5m, 1h30m)."
    )

    @property
    def duration_timedelta(self) -> timedelta | None:
        """None for an indefinite pause, which lasts until promoted."""
        return None if self.duration is None else parse_duration(self.duration)


class Step(SpecModel):
    """One step; set exactly one of setWeight or pause."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule("has(self.setWeight) != has(self.pause)", message="set exactly one of setWeight or pause")
        )
    )

    set_weight: Annotated[Integer, Field(ge=0, le=100)] | None = Field(
        None, description="Route this percentage of traffic to the candidate."
    )
    pause: Pause | None = Field(
        None,
        description="Hold the current weight, analysis continuing. Without a duration the pause lasts "
        "until `modelgate promote`.",
    )

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Self:
        if (self.set_weight is None) == (self.pause is None):
            raise ValueError("set exactly one of setWeight or pause")
        return self


class RollbackSpec(SpecModel):
    on_prometheus_error: OnPrometheusError = Field(
        "pause",
        description="After maxConsecutiveErrors failed evaluations in a row, pause (keep the weight and "
        "wait for `modelgate resume`) or roll back.",
    )
    max_consecutive_errors: Annotated[Integer, Field(ge=1)] = Field(
        3, description="Evaluations in a row with a Prometheus error before onPrometheusError applies."
    )
    gradual: GradualRollback | None = Field(
        None,
        description="Step the candidate's weight down to 0 over a duration instead of at once, for "
        "incumbents that need to warm their caches. Without it every rollback is immediate.",
    )
    on_delete: OnDelete = Field(
        "Leave",
        description="What deleting the ModelRollout does to the route: Leave it as it is, or "
        "ReturnTraffic: set the candidate's weight to 0 first (the operator keeps a finalizer on the "
        "rollout for that, until it succeeds or is rolled back to 0).",
    )


class Deadline(SpecModel):
    after: PositiveDuration = Field(description="How long the rollout may stay so, as a Go-style duration.")
    action: DeadlineAction = Field(
        description="Then: pause (wait for `modelgate resume` or `promote`), rollback, or fail (Failed, "
        "weights left as they are)."
    )

    @property
    def after_timedelta(self) -> timedelta:
        return parse_duration(self.after)


class ProgressDeadlines(SpecModel):
    """So that a rollout that cannot make progress does not hold two model fleets forever."""

    pending: Deadline | None = Field(
        None,
        description="The candidate has not become Available this long after the rollout started, or "
        "(with spec.capacity.enforce) a step has waited this long for the candidate's Ready replicas.",
    )
    inconclusive: Deadline | None = Field(
        None,
        description="The current step's analysis has been Inconclusive (too little data) this long, "
        "counted from its first Inconclusive verdict in the step.",
    )


class ModelRolloutSpec(SpecModel):
    """The desired rollout."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "self.candidate.deployment != self.incumbent.deployment",
                field_path=".candidate.deployment",
                message_expression="'must differ from spec.incumbent.deployment (both are ' "
                "+ self.incumbent.deployment + ')'",
            )
        )
    )

    incumbent: DeploymentRef = Field(
        description="The Deployment serving today; it takes back all traffic on rollback."
    )
    candidate: DeploymentRef = Field(
        description="The Deployment being rolled out; must differ from the incumbent. Changing it starts "
        "a new rollout from step 0."
    )
    traffic_routing: TrafficRouting = Field(
        description="How traffic is split between the two Deployments. Set exactly one router."
    )
    steps: Annotated[tuple[Step, ...], Field(min_length=1, max_length=50)] = Field(
        description="What to do, in order. Weights move only as these steps say, or to 0 on rollback. "
        "After the last step the candidate keeps the weight it was given."
    )
    analysis: AnalysisSpec | None = Field(
        None,
        description="Metrics that gate every step. Without analysis the steps advance on time and manual "
        "promotion alone.",
    )
    rollback: RollbackSpec = Field(
        RollbackSpec(),
        description="What happens when the metrics cannot be read, how a rollback moves the weight, and "
        "what deleting the rollout does.",
    )
    progress_deadlines: ProgressDeadlines | None = Field(
        None, description="What to do when a rollout stays Pending or Inconclusive too long."
    )
    capacity: CapacitySpec | None = Field(
        None, description="Whether a step waits for the candidate's Ready replicas before raising its weight."
    )

    @model_validator(mode="after")
    def _candidate_differs(self) -> Self:
        if self.candidate.deployment == self.incumbent.deployment:
            raise FieldPathError(
                "candidate.deployment",
                f"must differ from spec.incumbent.deployment (both are {self.incumbent.deployment})",
            )
        return self


def parse_spec(spec: Mapping[str, Any]) -> ModelRolloutSpec:
    """Validate a ModelRollout's spec; InvalidSpecError lists each problem as `spec.<path>: <reason>`."""
    try:
        return ModelRolloutSpec.model_validate(spec)
    except ValidationError as error:
        raise InvalidSpecError.from_validation_error(error, root="spec") from None
