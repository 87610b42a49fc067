"""ModelRollout.spec as frozen pydantic models, mirroring crds/modelrollouts.modelgate.io.yaml.

Field names, bounds, patterns and defaults are the CRD's; the validators repeat its CEL rules, so a
spec that did not pass through the API server (tests, the CLI, an older CRD) gets the same answers.
"""

from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    StringConstraints,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from modelgate.api.duration import parse_duration
from modelgate.api.errors import FieldPathError, InvalidSpecError
from modelgate.api.fields import (
    Duration,
    HttpUrl,
    MetricName,
    ObjectName,
    PodRegex,
    PositiveDuration,
    SecretKey,
)

MetricPreset = Literal["errorRate", "latencyP99", "refusalRate"]
OnPrometheusError = Literal["pause", "rollback"]


class SpecModel(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel, extra="forbid")


class DeploymentRef(SpecModel):
    deployment: ObjectName
    # None means the default, `<deployment>-.*` (modelgate.metrics.context.default_pod_regex).
    pod_regex: PodRegex | None = None


class GatewayAPIRouting(SpecModel):
    http_route: ObjectName
    rule_index: Annotated[int, Field(ge=0)] = 0
    incumbent_backend: ObjectName
    candidate_backend: ObjectName

    @model_validator(mode="after")
    def _backends_differ(self) -> Self:
        if self.candidate_backend == self.incumbent_backend:
            raise FieldPathError("candidateBackend", "must differ from incumbentBackend")
        return self


class TrafficRouting(SpecModel):
    """Exactly one router is set; a new router is one more optional field here and in the CRD."""

    gateway_api: GatewayAPIRouting | None = Field(default=None, alias="gatewayAPI")

    @model_validator(mode="after")
    def _exactly_one_router(self) -> Self:
        if len(self._set_router_keys()) != 1:
            supported = ", ".join(str(field.alias) for field in type(self).model_fields.values())
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
    duration: Duration | None = None

    @property
    def duration_timedelta(self) -> timedelta | None:
        """None for an indefinite pause, which lasts until promoted."""
        return None if self.duration is None else parse_duration(self.duration)


class Step(SpecModel):
    set_weight: Annotated[int, Field(ge=0, le=100)] | None = None
    pause: Pause | None = None

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Self:
        if (self.set_weight is None) == (self.pause is None):
            raise ValueError("set exactly one of setWeight or pause")
        return self


class SecretKeyRef(SpecModel):
    name: ObjectName
    key: SecretKey


class PrometheusSpec(SpecModel):
    address: HttpUrl
    timeout: PositiveDuration = "5s"
    bearer_token_secret_ref: SecretKeyRef | None = None

    @property
    def timeout_timedelta(self) -> timedelta:
        return parse_duration(self.timeout)


class MetricSpec(SpecModel):
    name: MetricName
    preset: MetricPreset | None = None
    query: Annotated[str, StringConstraints(min_length=1, max_length=4096)] | None = None
    max: FiniteFloat | None = None
    min: FiniteFloat | None = None
    failure_limit: Annotated[int, Field(ge=0)] = 0

    @model_validator(mode="after")
    def _well_formed(self) -> Self:
        if (self.preset is None) == (self.query is None):
            raise ValueError(f"metric {self.name}: set exactly one of preset or query")
        if self.max is None and self.min is None:
            raise ValueError(f"metric {self.name}: set max, min or both")
        if self.max is not None and self.min is not None and self.min > self.max:
            raise FieldPathError("min", f"metric {self.name}: min must not be greater than max")
        return self


class AnalysisSpec(SpecModel):
    interval: PositiveDuration = "30s"
    min_requests: Annotated[int, Field(ge=0)] = 50
    prometheus: PrometheusSpec
    metrics: Annotated[tuple[MetricSpec, ...], Field(min_length=1, max_length=20)]

    @model_validator(mode="after")
    def _unique_metric_names(self) -> Self:
        seen: set[str] = set()
        for index, metric in enumerate(self.metrics):
            if metric.name in seen:
                raise FieldPathError(f"metrics[{index}].name", f"duplicate metric name {metric.name}")
            seen.add(metric.name)
        return self

    @property
    def interval_timedelta(self) -> timedelta:
        return parse_duration(self.interval)

    @property
    def provider_key(self) -> str:
        """The metric provider in use, by which providers are registered. Prometheus is the only
        provider field today; a second one makes this "the one provider field that is set"."""
        return "prometheus"


class RollbackSpec(SpecModel):
    on_prometheus_error: OnPrometheusError = "pause"
    max_consecutive_errors: Annotated[int, Field(ge=1)] = 3


class ModelRolloutSpec(SpecModel):
    incumbent: DeploymentRef
    candidate: DeploymentRef
    traffic_routing: TrafficRouting
    steps: Annotated[tuple[Step, ...], Field(min_length=1, max_length=50)]
    analysis: AnalysisSpec | None = None
    rollback: RollbackSpec = RollbackSpec()

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
