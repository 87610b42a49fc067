"""spec.trafficRouting.istio: the destinations whose weights move in HTTP routes of VirtualServices."""

from typing import Annotated, Self

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from modelgate.api.errors import FieldPathError
from modelgate.api.fields import ObjectName
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.specmodel import SpecModel

MAX_VIRTUAL_SERVICES = 8
MAX_HTTP_ROUTES = 16
# Istio puts no pattern on an http route's name; it only has to be there to be named.
HttpRouteName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=253),
    Field(description="The `name` of an http route of the VirtualService."),
]
HttpRouteNames = Annotated[
    tuple[HttpRouteName, ...],
    Field(min_length=1, max_length=MAX_HTTP_ROUTES),
]


class IstioDestination(SpecModel):
    """A `destination` of an http route: matched by host as written there, and by subset."""

    host: ObjectName = Field(
        description="The destination's host, exactly as the VirtualService writes it (e.g. chat-v1 or "
        "chat.serving.svc.cluster.local)."
    )
    subset: ObjectName | None = Field(
        None,
        description="The destination's subset (a DestinationRule's); without it, only a destination "
        "without a subset matches.",
    )


class VirtualServiceRef(SpecModel):
    """One VirtualService, among several that a rollout moves together."""

    name: ObjectName = Field(description="Name of a VirtualService in the ModelRollout's namespace.")
    routes: HttpRouteNames | None = Field(
        None,
        description="Names of its http routes that carry both destinations; default: its only http "
        "route (a VirtualService with several must name them).",
    )


class IstioRouting(SpecModel):
    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "has(self.virtualService) != has(self.virtualServices)",
                message="set exactly one of virtualService or virtualServices",
            ),
            CelRule(
                "!has(self.virtualServices) || !has(self.routes)",
                field_path=".routes",
                message="with virtualServices, set routes in each of virtualServices instead",
            ),
            CelRule(
                "self.candidateDestination.host != self.incumbentDestination.host || "
                "(has(self.candidateDestination.subset) ? self.candidateDestination.subset : '') != "
                "(has(self.incumbentDestination.subset) ? self.incumbentDestination.subset : '')",
                field_path=".candidateDestination",
                message="must differ from incumbentDestination",
            ),
            CelRule(
                "!has(self.virtualServices) || "
                "self.virtualServices.all(v, self.virtualServices.exists_one(o, o.name == v.name))",
                field_path=".virtualServices",
                message="must not name the same VirtualService twice",
            ),
        )
    )

    virtual_service: ObjectName | None = Field(
        None,
        description="Name of the VirtualService, in the ModelRollout's namespace (set exactly one of "
        "virtualService or virtualServices).",
    )
    routes: HttpRouteNames | None = Field(
        None,
        description="Names of the VirtualService's http routes that carry both destinations; default: "
        "its only http route (a VirtualService with several must name them).",
    )
    virtual_services: (
        Annotated[tuple[VirtualServiceRef, ...], Field(min_length=1, max_length=MAX_VIRTUAL_SERVICES)] | None
    ) = Field(
        None,
        description="Several VirtualServices moved together: every one gets each weight, and a "
        "rollback sets every one to 0 first.",
    )
    incumbent_destination: IstioDestination = Field(description="The destination that reaches the incumbent.")
    candidate_destination: IstioDestination = Field(description="The destination that reaches the candidate.")

    @model_validator(mode="after")
    def _one_way_to_name_virtual_services(self) -> Self:
        if (self.virtual_service is None) == (self.virtual_services is None):
            raise ValueError("set exactly one of virtualService or virtualServices")
        if self.virtual_services is not None and self.routes is not None:
            raise FieldPathError(
                "routes", "with virtualServices, set routes in each of virtualServices instead"
            )
        if self.candidate_destination == self.incumbent_destination:
            raise FieldPathError("candidateDestination", "must differ from incumbentDestination")
        names = [ref.name for ref in self.virtual_services or ()]
        if len(set(names)) != len(names):
            raise FieldPathError("virtualServices", "must not name the same VirtualService twice")
        return self

    @property
    def virtual_service_refs(self) -> tuple[VirtualServiceRef, ...]:
        """Every VirtualService named, however the spec names them."""
        if self.virtual_services is not None:
            return self.virtual_services
        assert self.virtual_service is not None
        return (VirtualServiceRef(name=self.virtual_service, routes=self.routes),)
