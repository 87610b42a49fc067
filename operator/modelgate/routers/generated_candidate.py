"""A one-edit rollout's generated candidate (spec.candidatePatch) on the cluster: what exists of it, and
each change the engine asks for (core/endings.py): create, remove, patch the incumbent, release.

The candidate's backendRef is the only member the operator adds to or removes from a route rule: an
`add` at the end of the rule's backendRefs at weight 0, and a `remove` of the one named so, each
guarded by the route's resourceVersion (and the removed item's name), as weight writes are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import structlog

from modelgate.api import ModelRolloutSpec
from modelgate.api.candidate_patch import CandidatePatch
from modelgate.core import Event, Reason
from modelgate.core.results import GeneratedChange, GeneratedObjects
from modelgate.kube import Conflict, Kube, KubeError, NotFound, PatchNotApplied
from modelgate.kube.generated_objects import (
    GENERATED_LABEL,
    candidate_deployment,
    candidate_service,
    carries_patch,
    owned_by,
    patched_template_ops,
)
from modelgate.kube.generated_resources import APPS, SERVICES
from modelgate.kube.labels import ROLLOUT_LABEL, label_value
from modelgate.kube.objects import availability
from modelgate.routers.gatewayapi import GATEWAY_GROUP, GATEWAY_VERSION, RouteTarget, route_targets
from modelgate.routers.patched import MAX_WRITE_ATTEMPTS, JsonPatch, version_test

log = structlog.get_logger("modelgate.generated")
FORBIDDEN = 403


def backend_ref_patch(route: Mapping[str, Any], target: RouteTarget, present: bool) -> JsonPatch | None:
    """The JSON patch that adds (`present`) or removes the candidate's backendRef in the target's
    rule; None when there is nothing to do (or no such rule: the router says why)."""
    rules = route.get("spec", {}).get("rules") or []
    if target.rule_index >= len(rules):
        return None
    refs = rules[target.rule_index].get("backendRefs") or []
    path = f"/spec/rules/{target.rule_index}/backendRefs"
    found = _candidate_ref(route, target)
    guard = version_test(str(route["metadata"]["resourceVersion"]))
    if present and found is None:
        incumbent = next((ref for ref in refs if _is_service(route, ref, target.incumbent_backend)), None)
        if incumbent is None:
            return None
        added = {"name": target.candidate_backend, "weight": 0}
        if "port" in incumbent:
            added["port"] = incumbent["port"]
        return [guard, {"op": "add", "path": f"{path}/-", "value": added}]
    if not present and found is not None:
        named = {"op": "test", "path": f"{path}/{found}/name", "value": target.candidate_backend}
        return [guard, named, {"op": "remove", "path": f"{path}/{found}"}]
    return None


def _candidate_ref(route: Mapping[str, Any], target: RouteTarget) -> int | None:
    """The index of the candidate's backendRef in the target's rule; None without one."""
    rules = route.get("spec", {}).get("rules") or []
    refs = rules[target.rule_index].get("backendRefs") or [] if target.rule_index < len(rules) else []
    return next((i for i, ref in enumerate(refs) if _is_service(route, ref, target.candidate_backend)), None)


def _is_service(route: Mapping[str, Any], ref: Mapping[str, Any], name: str) -> bool:
    """Whether the backendRef is the Service `name` in the route's own namespace."""
    namespace = route.get("metadata", {}).get("namespace")
    kind = (ref.get("group", ""), ref.get("kind", "Service"))
    return (
        ref.get("name") == name and kind == ("", "Service") and ref.get("namespace", namespace) == namespace
    )


class GeneratedCandidate:
    """One tick's view of a one-edit rollout's generated objects."""

    def __init__(self, kube: Kube, rollout: Mapping[str, Any], spec: ModelRolloutSpec) -> None:
        assert spec.candidate_patch is not None and spec.traffic_routing.gateway_api is not None
        self.kube = kube
        self.rollout = rollout
        self.namespace: str = rollout["metadata"]["namespace"]
        self.patch: CandidatePatch = spec.candidate_patch
        self.name = spec.candidate.name
        self.incumbent = spec.incumbent.name
        self.incumbent_service = spec.traffic_routing.gateway_api.incumbent_backend
        self.targets = route_targets(spec.traffic_routing.gateway_api)

    def observe(self) -> GeneratedObjects:
        deployment = self.kube.read_whole(APPS, self.namespace, self.name)
        incumbent = self.kube.read_whole(APPS, self.namespace, self.incumbent)
        routes = [self._route(target, fresh=False) for target in self.targets]
        refs = all(
            route is not None and _candidate_ref(route, target) is not None
            for route, target in zip(routes, self.targets, strict=True)
        )
        return GeneratedObjects(
            deployment=deployment is not None,
            service=self.kube.read_whole(SERVICES, self.namespace, self.name) is not None,
            backend_refs=refs,
            owned=deployment is None or owned_by(deployment, self.rollout["metadata"]["uid"]),
            incumbent_patched=incumbent is not None and carries_patch(incumbent, self.patch),
            incumbent_rolled_out=incumbent is not None and availability("", incumbent).available,
            incumbent_scaled_down=incumbent is not None and (incumbent["spec"].get("replicas") == 0),
        )

    def apply(self, change: GeneratedChange) -> Event:
        """Makes the change; the Event that says what it did or why it could not. A change the
        operator may not make is a Warning, asked for again at the next tick; a removal that fails
        raises, so that a deletion keeps its finalizer until it is done."""
        if change is GeneratedChange.REMOVE:
            return self._remove()
        try:
            match change:
                case GeneratedChange.CREATE:
                    return self._create()
                case GeneratedChange.PATCH_INCUMBENT:
                    return self._patch_incumbent()
                case GeneratedChange.RELEASE:
                    return self._release()
        except KubeError as error:
            if error.status != FORBIDDEN:
                raise
            message = f"{change.value}: {error} (the chart grants the rights with oneEdit.enabled)"
            return Event(Reason.GENERATION_FAILED, message)

    def _create(self) -> Event:
        self._remove_stale()
        incumbent = self.kube.read_whole(APPS, self.namespace, self.incumbent)
        service = self.kube.read_whole(SERVICES, self.namespace, self.incumbent_service)
        if incumbent is None or service is None:
            missing = (
                f"Deployment {self.incumbent}" if incumbent is None else f"Service {self.incumbent_service}"
            )
            return Event(
                Reason.GENERATION_FAILED, f"cannot generate the candidate {self.name}: {missing} not found"
            )
        selector = (service.get("spec") or {}).get("selector") or {}
        deployment = candidate_deployment(incumbent, selector, self.patch, self.name, self.rollout)
        if isinstance(deployment, str):
            return Event(Reason.GENERATION_FAILED, f"cannot generate the candidate {self.name}: {deployment}")
        for kind, body in (
            (APPS, deployment),
            (SERVICES, candidate_service(service, self.name, self.rollout)),
        ):
            if not self.kube.create_generated(kind, body) and not self._owns(kind, self.name):
                # Someone's object of the generated name: never given the candidate's traffic.
                what = "Deployment" if kind == APPS else "Service"
                return Event(
                    Reason.GENERATION_FAILED,
                    f"cannot generate the candidate: {what} {self.name} exists and is not this rollout's",
                )
        unrouted = [target.name for target in self.targets if not self._edit_route(target, present=True)]
        if unrouted:  # asked again at the next tick, as a Warning each time, until the route is fixed
            return Event(
                Reason.GENERATION_FAILED,
                f"cannot add the candidate {self.name} to route {unrouted[0]}: its rule has no backendRef "
                "of spec.trafficRouting.gatewayAPI.incumbentBackend to add it beside",
            )
        message = (
            f"generated the candidate Deployment and Service {self.name} from {self.incumbent}, at weight 0"
        )
        return Event(Reason.CANDIDATE_GENERATED, message)

    def _remove(self) -> Event:
        self._remove_stale()
        self._remove_named(self.name)
        return Event(
            Reason.GENERATED_REMOVED,
            f"removed the generated candidate {self.name}: its backendRef, Service and Deployment",
        )

    def _remove_named(self, name: str) -> None:
        for target in self.targets:  # first: a route never names a Service that is gone
            self._edit_route(replace(target, candidate_backend=name), present=False)
        for kind in (SERVICES, APPS):  # only this rollout's: a name is anyone's to take
            if self._owns(kind, name):
                self.kube.delete_generated(kind, self.namespace, name)

    def _owns(self, kind: str, name: str) -> bool:
        found = self.kube.read_whole(kind, self.namespace, name)
        return found is not None and owned_by(found, self.rollout["metadata"]["uid"])

    def _remove_stale(self) -> None:
        """What this rollout generated for an earlier patch (a changed patch is a new rollout): its
        candidate's weight, whatever it was, goes with its backendRef."""
        rollout = self.rollout["metadata"]["name"]
        selector = f"{ROLLOUT_LABEL}={label_value(rollout)},{GENERATED_LABEL}!={self.name}"
        uid = self.rollout["metadata"]["uid"]
        for stale in self.kube.generated_deployments(self.namespace, selector):
            found = self.kube.read_whole(APPS, self.namespace, stale)
            if found is not None and owned_by(found, uid):  # labels alone are anyone's to write
                log.info("removing the candidate of an earlier patch", deployment=stale)
                self._remove_named(stale)

    def _patch_incumbent(self) -> Event:
        incumbent = self.kube.read_whole(APPS, self.namespace, self.incumbent)
        if incumbent is None:
            return Event(
                Reason.GENERATION_FAILED, f"cannot patch the incumbent: Deployment {self.incumbent} not found"
            )
        operations = patched_template_ops(incumbent, self.patch)
        if isinstance(operations, str):
            return Event(
                Reason.GENERATION_FAILED, f"cannot patch the incumbent {self.incumbent}: {operations}"
            )
        self.kube.json_patch_generated(APPS, self.namespace, self.incumbent, operations)
        message = (
            f"the incumbent {self.incumbent} takes the promoted patch; the traffic returns to it once "
            "it is rolled out"
        )
        return Event(Reason.INCUMBENT_PATCHED, message)

    def _release(self) -> Event:
        uid = self.rollout["metadata"]["uid"]
        for kind in (APPS, SERVICES):
            found = self.kube.read_whole(kind, self.namespace, self.name)
            if found is not None and owned_by(found, uid):
                released = [{"op": "remove", "path": "/metadata/ownerReferences"}]
                self.kube.json_patch_generated(kind, self.namespace, self.name, released)
        message = (
            f"the candidate {self.name} is released: it outlives the rollout, and the incumbent "
            f"{self.incumbent} is retired"
        )
        return Event(Reason.CANDIDATE_RELEASED, message)

    def _route(self, target: RouteTarget, *, fresh: bool = True) -> dict[str, Any] | None:
        """The route; from the watch cache unless `fresh` (an edit is built on the server's)."""
        try:
            return self.kube.get_custom(
                GATEWAY_GROUP, GATEWAY_VERSION, self.namespace, target.kind.plural, target.name, fresh=fresh
            )
        except NotFound:
            return None

    def _edit_route(self, target: RouteTarget, *, present: bool) -> bool:
        """Adds or removes the candidate's backendRef; whether the rule now has it as asked (not when
        the route or its rule is missing, or it holds no incumbent backendRef to add it beside)."""
        for _ in range(MAX_WRITE_ATTEMPTS):
            route = self._route(target)
            operations = None if route is None else backend_ref_patch(route, target, present)
            if operations is None:
                return route is not None and (_candidate_ref(route, target) is not None) == present
            try:
                self.kube.json_patch_custom(
                    GATEWAY_GROUP,
                    GATEWAY_VERSION,
                    self.namespace,
                    target.kind.plural,
                    target.name,
                    operations,
                )
                log.info("candidate backendRef " + ("added" if present else "removed"), route=target.name)
                return True
            except (Conflict, PatchNotApplied):
                continue  # another writer in between: built again on the fresh route
        raise Conflict(
            None, f"{target.kind.kind} {target.name} changed under each attempt to edit its backendRefs"
        )
