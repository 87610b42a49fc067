"""ModelRollout.spec.trafficRouting: which router splits traffic, and the Gateway API routes it moves."""

from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from modelgate.api.errors import FieldPathError
from modelgate.api.fields import Integer, ObjectName
from modelgate.api.istio_routing import IstioRouting
from modelgate.api.markers import CelRule, JsonDict, cel_rules
from modelgate.api.model_rewrite_routing import InferenceModelRewriteRouting
from modelgate.api.specmodel import SpecModel

MAX_ROUTES = 8  # routes (or VirtualServices) one rollout moves together


# Gateway API allows an HTTPRoute or a GRPCRoute 16 rules.
MAX_ROUTE_RULE = 15


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
    rule_index: Annotated[Integer, Field(ge=0, le=MAX_ROUTE_RULE)] = Field(
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
                "!has(self.candidateBackend) || self.candidateBackend != self.incumbentBackend",
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
    rule_index: Annotated[Integer, Field(ge=0, le=MAX_ROUTE_RULE)] | None = Field(
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
    # Absent with spec.candidatePatch, and then filled in before validation with the Service the operator
    # generates (api/one_edit.py): never None once the spec is parsed, so it is typed as always set.
    candidate_backend: ObjectName = Field(  # type: ignore[assignment]
        None,
        description="backendRef name that reaches the candidate: a Service, or for an inferencePool "
        "candidate that InferencePool. Required unless spec.candidatePatch is set (then the operator "
        "names the Service it generates).",
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
    inference_model_rewrite: InferenceModelRewriteRouting | None = Field(
        default=None,
        alias="inferenceModelRewrite",
        description="Split one InferencePool's traffic between two LoRA adapters (or model names) by "
        "rewriting the weights of two targets of a rule of llm-d's InferenceModelRewrite (llm-d.ai); "
        "both sides name the pool and an adapter.",
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
