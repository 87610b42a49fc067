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
from modelgate.api.gate import GateSpec
from modelgate.api.istio_routing import IstioRouting
from modelgate.api.markers import CelRule, JsonDict, cel_rules
from modelgate.api.safety import CapacitySpec, GradualRollback, OnDelete
from modelgate.api.specmodel import SpecModel
from modelgate.api.watch import WatchSpec

OnPrometheusError = Literal["pause", "rollback"]
DeadlineAction = Literal["pause", "rollback", "fail", "wait"]


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


MAX_ROUTES = 8  # routes (or VirtualServices) one rollout moves together


class GatewayRouteRef(SpecModel):
    """One rule of one route, among several that a rollout moves together."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "has(self.httpRoute) != has(self.grpcRoute)",
                message="set exactly one of httpRoute or grpcRoute",
            )
        )
    )

    http_route: ObjectName | None = Field(None, description="Name of an HTTPRoute.")
    grpc_route: ObjectName | None = Field(None, description="Name of a GRPCRoute.")
    rule_index: Annotated[Integer, Field(ge=0)] = Field(
        0, description="Index of the route rule whose backendRefs hold the two backends."
    )

    @model_validator(mode="after")
    def _one_route(self) -> Self:
        if (self.http_route is None) == (self.grpc_route is None):
            raise ValueError("set exactly one of httpRoute or grpcRoute")
        return self


class GatewayAPIRouting(SpecModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "self.candidateBackend != self.incumbentBackend",
                field_path=".candidateBackend",
                message="must differ from incumbentBackend",
            ),
            CelRule(
                "[has(self.httpRoute), has(self.grpcRoute), has(self.routes)].exists_one(isSet, isSet)",
                message="set exactly one of httpRoute, grpcRoute or routes",
            ),
            CelRule(
                "!has(self.routes) || !has(self.ruleIndex)",
                field_path=".ruleIndex",
                message="with routes, set ruleIndex in each of routes instead",
            ),
            CelRule(
                "!has(self.routes) || self.routes.all(r, self.routes.exists_one(o, "
                "o.ruleIndex == r.ruleIndex"
                " && (has(o.httpRoute) ? o.httpRoute : '') == (has(r.httpRoute) ? r.httpRoute : '')"
                " && (has(o.grpcRoute) ? o.grpcRoute : '') == (has(r.grpcRoute) ? r.grpcRoute : '')))",
                field_path=".routes",
                message="must not name the same rule of a route twice",
            ),
        )
    )

    http_route: ObjectName | None = Field(
        None, description="Name of the HTTPRoute (set exactly one of httpRoute, grpcRoute or routes)."
    )
    grpc_route: ObjectName | None = Field(
        None,
        description="Name of the GRPCRoute, whose backend weights are moved as an HTTPRoute's are.",
    )
    # None means rule 0; it is not a default so that it can be refused next to `routes`.
    rule_index: Annotated[Integer, Field(ge=0)] | None = Field(
        None, description="Index of the route rule whose backendRefs hold the two backends (default 0)."
    )
    routes: Annotated[tuple[GatewayRouteRef, ...], Field(min_length=1, max_length=MAX_ROUTES)] | None = Field(
        None,
        description="Several rules of HTTPRoutes and GRPCRoutes (in the ModelRollout's namespace) "
        "that all carry the two backends and are moved together: every one gets each weight, and a "
        "rollback sets every one to 0 first.",
    )
    incumbent_backend: ObjectName = Field(
        description="backendRef name that reaches the incumbent: a Service, or for an inferencePool "
        "incumbent that InferencePool."
    )
    candidate_backend: ObjectName = Field(
        description="backendRef name that reaches the candidate: a Service, or for an inferencePool "
        "candidate that InferencePool."
    )

    @model_validator(mode="after")
    def _backends_differ(self) -> Self:
        if self.candidate_backend == self.incumbent_backend:
            raise FieldPathError("candidateBackend", "must differ from incumbentBackend")
        return self

    @model_validator(mode="after")
    def _one_way_to_name_routes(self) -> Self:
        if sum(named is not None for named in (self.http_route, self.grpc_route, self.routes)) != 1:
            raise ValueError("set exactly one of httpRoute, grpcRoute or routes")
        if self.routes is not None and self.rule_index is not None:
            raise FieldPathError("ruleIndex", "with routes, set ruleIndex in each of routes instead")
        if self.routes is not None and len(set(self.routes)) != len(self.routes):
            raise FieldPathError("routes", "must not name the same rule of a route twice")
        return self

    @property
    def route_refs(self) -> tuple[GatewayRouteRef, ...]:
        """Every route rule named, however the spec names them."""
        if self.routes is not None:
            return self.routes
        return (
            GatewayRouteRef(
                http_route=self.http_route, grpc_route=self.grpc_route, rule_index=self.rule_index or 0
            ),
        )


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
        description="Split traffic by rewriting the backend weights of rules of Gateway API "
        "HTTPRoutes or GRPCRoutes in the ModelRollout's namespace.",
    )
    istio: IstioRouting | None = Field(
        default=None,
        description="Split traffic by rewriting the weights of two destinations in HTTP routes of Istio "
        "VirtualServices in the ModelRollout's namespace.",
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


class Mirror(SpecModel):
    percent: Annotated[Integer, Field(ge=1, le=100)] = Field(
        description="Percentage of the route rule's requests copied to the candidate; the copies' answers "
        "are discarded, users get the answers of the backend that served them."
    )
    duration: PositiveDuration = Field(
        description="How long to mirror, as a Go-style duration; with analysis, the step also waits for "
        "a passing evaluation."
    )

    @property
    def duration_timedelta(self) -> timedelta:
        return parse_duration(self.duration)


STEP_KINDS = "set exactly one of setWeight, pause or mirror"


class Step(SpecModel):
    """One step; set exactly one of setWeight, pause or mirror."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "[has(self.setWeight), has(self.pause), has(self.mirror)].exists_one(k, k)",
                message=STEP_KINDS,
            )
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

    mirror: Mirror | None = Field(
        None,
        description="Shadow the candidate: copy a share of the rule's requests to it for a while, its "
        "weight unchanged (0 before any setWeight), and judge its own metrics on the copies. The copies "
        "stop in the same write as the next step's weight, and on rollback. The gatewayAPI router writes a "
        "RequestMirror filter, the istio router the http route's mirror.",
    )

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Self:
        if [self.set_weight, self.pause, self.mirror].count(None) != 2:
            raise ValueError(STEP_KINDS)
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
        description="Then: pause (wait for `modelgate resume` or `promote`), rollback, fail (Failed, "
        "the candidate's weight 0), or wait (nothing: the deadline is off)."
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
        description="The current step's analysis has been Inconclusive (too little data, or a series "
        "nobody exports) this long, counted from its first Inconclusive verdict in the step. Unset: "
        "after 10m, pause (in a step; the watch window has none); `action: wait` turns it off.",
    )


# What an unset spec.progressDeadlines.inconclusive means in a step: an Inconclusive step that no
# traffic or no exporter will ever settle stops at its weight and says why, rather than hold it forever.
DEFAULT_INCONCLUSIVE_DEADLINE = Deadline(after="10m", action="pause")


def _sides_differ(kind: str) -> CelRule:
    return CelRule(
        f"!has(self.candidate.{kind}) || !has(self.incumbent.{kind}) "
        f"|| self.candidate.{kind} != self.incumbent.{kind}",
        field_path=f".candidate.{kind}",
        message_expression=f"'must differ from spec.incumbent.{kind} (both are ' "
        f"+ self.incumbent.{kind} + ')'",
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
SCALE_DOWN_NEEDS_DEPLOYMENT = (
    "scaleDownIncumbent needs spec.incumbent.deployment: an InferencePool has no replicas"
)


class ModelRolloutSpec(SpecModel):
    """The desired rollout."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            _sides_differ("deployment"),
            _sides_differ("inferencePool"),
            _pool_is_backend("incumbent"),
            _pool_is_backend("candidate"),
            CelRule(
                "!has(self.trafficRouting.istio) || "
                "!(has(self.incumbent.inferencePool) || has(self.candidate.inferencePool))",
                field_path=".trafficRouting.istio",
                message=POOLS_NEED_GATEWAY_API,
            ),
            CelRule(
                "!has(self.watch) || has(self.analysis)", field_path=".watch", message=WATCH_NEEDS_ANALYSIS
            ),
            CelRule(
                "!has(self.watch) || !has(self.watch.scaleDownIncumbent) || !self.watch.scaleDownIncumbent "
                "|| has(self.incumbent.deployment)",
                field_path=".watch.scaleDownIncumbent",
                message=SCALE_DOWN_NEEDS_DEPLOYMENT,
            ),
            CelRule(
                "!has(self.gate) || !has(self.gate.full) || !has(self.gate.full.startAtStep) "
                "|| self.gate.full.startAtStep < size(self.steps)",
                field_path=".gate.full.startAtStep",
                message=START_PAST_THE_STEPS,
            ),
        )
    )

    incumbent: WorkloadRef = Field(
        description="The Deployment or InferencePool serving today; it takes back all traffic on rollback."
    )
    candidate: WorkloadRef = Field(
        description="The Deployment or InferencePool being rolled out; must differ from the incumbent. "
        "Changing it starts a new rollout from step 0."
    )
    traffic_routing: TrafficRouting = Field(
        description="How traffic is split between the two sides. Set exactly one router."
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

    @model_validator(mode="after")
    def _candidate_differs(self) -> Self:
        incumbent, candidate = self.incumbent, self.candidate
        if candidate.kind == incumbent.kind and candidate.name == incumbent.name:
            raise FieldPathError(
                f"candidate.{candidate.field}",
                f"must differ from spec.incumbent.{incumbent.field} (both are {incumbent.name})",
            )
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
        if watch is not None and self.analysis is None:
            raise FieldPathError("watch", WATCH_NEEDS_ANALYSIS)
        if watch is not None and watch.scale_down_incumbent and self.incumbent.deployment is None:
            raise FieldPathError("watch.scaleDownIncumbent", SCALE_DOWN_NEEDS_DEPLOYMENT)
        return self

    @model_validator(mode="after")
    def _gate_starts_at_a_step(self) -> Self:
        start = self.gate.full.start_at_step if self.gate is not None else None
        if start is not None and start >= len(self.steps):
            raise FieldPathError("gate.full.startAtStep", START_PAST_THE_STEPS)
        return self


def parse_spec(spec: Mapping[str, Any]) -> ModelRolloutSpec:
    """Validate a ModelRollout's spec; InvalidSpecError lists each problem as `spec.<path>: <reason>`."""
    try:
        return ModelRolloutSpec.model_validate(spec)
    except ValidationError as error:
        raise InvalidSpecError.from_validation_error(error, root="spec") from None
