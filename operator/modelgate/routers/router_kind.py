"""One kind of traffic router as one record, read instead of branching on the router's key.

One kind of traffic router as one record: everything that differs from one router to the next
(which objects it watches, the Service a gate check calls by default, its RBAC, how it is built) is
read from here, never by branching on the router's key."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from modelgate.api.series import SeriesSide
from modelgate.kube import Kube
from modelgate.routers.base import SideKinds, TrafficRouter

RouteKey = tuple[str, str]  # plural, name: one object a rollout's router reads
# A router reads its objects from watch caches and JSON-patches two weights in them; it never
# creates, replaces or deletes one.
ROUTE_VERBS = ("get", "list", "watch", "patch")
# A kind of object a router no longer writes is only read by name, to refuse it saying what replaced it.
REMOVED_VERBS = ("get",)

ConfigT = TypeVar("ConfigT", bound=BaseModel)


@dataclass(frozen=True)
class RouteResource:
    """A kind of object a router reads and patches: watched (a change wakes the rollouts naming
    it), cached, and granted in the chart's RBAC."""

    group: str
    version: str
    plural: str


@dataclass(frozen=True)
class RbacRule:
    api_group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]


@dataclass(frozen=True)
class RouterKind(Generic[ConfigT]):
    key: str  # its field under spec.trafficRouting, by which it is registered
    config: type[ConfigT]  # that field's model, from modelgate.api
    resources: tuple[RouteResource, ...]
    named_routes: Callable[[ConfigT], Iterable[RouteKey]]  # the objects a config names
    backend_service: Callable[[ConfigT, SeriesSide], str]  # the Service that reaches a Deployment side
    factory: Callable[[Kube, str, ConfigT, SideKinds], TrafficRouter]
    what_it_writes: str  # a line of the chart's RBAC comment: the objects, and what of them is written
    # Kinds it wrote before an API moved: neither watched nor written, only read by name when the
    # named object is missing, so that a user who still has one of them is told what replaced it.
    removed: tuple[RouteResource, ...] = ()

    @property
    def rbac_rules(self) -> tuple[RbacRule, ...]:
        """Its resources, one rule per API group, with the verbs a router calls; then its removed
        kinds', read only."""
        return _rules(self.resources, ROUTE_VERBS) + _rules(self.removed, REMOVED_VERBS)

    def watched(self, raw_config: Mapping[str, Any]) -> frozenset[RouteKey]:
        """The objects named by its section of a rollout's raw spec, through its config model; a
        section the model refuses names nothing (the rollout fails on it, naming the field)."""
        try:
            config = self.config.model_validate(raw_config)
        except ValidationError:
            return frozenset()
        return frozenset(self.named_routes(config))


def _rules(resources: tuple[RouteResource, ...], verbs: tuple[str, ...]) -> tuple[RbacRule, ...]:
    groups = dict.fromkeys(resource.group for resource in resources)
    return tuple(
        RbacRule(group, tuple(r.plural for r in resources if r.group == group), verbs) for group in groups
    )
