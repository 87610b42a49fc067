"""What the routers of one Kubernetes object share: the cached read and the guarded patch.

What the routers of one Kubernetes object share: read it (from the watch cache), find the two
weights in it, and write them with a JSON patch guarded by a `test` of the resourceVersion that was
read, so that every other field stays as its owner left it and a write that raced with another writer
is redone on the fresh object. Which writer last changed the weights comes from managedFields; which
rollout owns the rule, from its claim (claims.py), written with the weights."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from modelgate.api import RolloutRef
from modelgate.core import LiveRoute, Reason, RouteProblem
from modelgate.kube import FIELD_MANAGER, Conflict, Kube, KubeError, NotFound, PatchNotApplied
from modelgate.routers.claims import claim_keys, claim_patch, owners

MAX_WRITE_ATTEMPTS = 5
JsonPatch = list[dict[str, Any]]


@dataclass(frozen=True)
class RouteObject:
    """The object a router writes. `field` is the spec field that names it (for messages);
    `weights_list` the member of its spec whose items hold the weights (`rules`, `http`), by whose
    managedFields the last writer of the weights is known."""

    group: str
    version: str
    plural: str
    kind: str
    namespace: str
    name: str
    field: str
    weights_list: str

    @property
    def id(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class Located(Protocol):
    """Where the two weights (and the candidate's mirror) sit in one version of the object, and what
    they are."""

    @property
    def rule_indexes(self) -> tuple[int, ...]:
        """The items of the weights list (rules, http routes) that hold the two weights."""
        ...

    def live(self, other_writer: str | None = None) -> LiveRoute: ...

    def patch(
        self, resource_version: str, candidate_weight: int, mirror_percent: int
    ) -> JsonPatch | RouteProblem:
        """Sets both weights and the mirror, and applies only to the object at `resource_version`
        (the one they were located in), so that the indexes cannot point at other items; a
        RouteProblem when the mirror cannot be written (someone else's copies to the candidate)."""
        ...


Locate = Callable[[Mapping[str, Any]], Located | RouteProblem]


def weights_writer(obj: Mapping[str, Any], weights_list: str, own_manager: str = FIELD_MANAGER) -> str | None:
    """Who last changed `spec.<weights_list>`, from metadata.managedFields: the most recent field
    manager that owns any of it, or None when that is `own_manager` (the operator) or no entry says.
    The lists are atomic, so a write of any weight makes its writer the only Update owner of all of it."""
    owners = [
        entry
        for entry in obj.get("metadata", {}).get("managedFields") or []
        if f"f:{weights_list}" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
    ]
    if not owners or any(entry.get("manager") == own_manager for entry in owners):
        return None
    latest = max(owners, key=lambda entry: str(entry.get("time") or ""))
    return str(latest.get("manager") or "an unnamed field manager")


def set_weight_op(path: str, weight: int) -> dict[str, Any]:
    """`add` sets a member whether or not it exists, so an absent weight is written too."""
    return {"op": "add", "path": path, "value": weight}


def version_test(resource_version: str) -> dict[str, Any]:
    return {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}


class PatchedRouter:
    """A TrafficRouter over one object; one instance per tick."""

    def __init__(self, kube: Kube, obj: RouteObject, locate: Locate) -> None:
        self.kube = kube
        self.obj = obj
        self._locate = locate
        self._seen: dict[str, Any] | None = None  # the object as last read or written
        self._read_owners: frozenset[RolloutRef] = frozenset()  # the claims `read` saw

    def read(self) -> LiveRoute | RouteProblem:
        found = self._seen = self._get()
        if found is None:
            return self._not_found()
        located = self._locate(found)
        if isinstance(located, RouteProblem):
            return located
        self._read_owners = self._owners(found, located)
        return replace(located.live(weights_writer(found, self.obj.weights_list)), owners=self._read_owners)

    def set_weights(
        self, candidate_weight: int, mirror_percent: int = 0, owner: RolloutRef | None = None
    ) -> LiveRoute | RouteProblem:
        if not (0 <= candidate_weight <= 100 and 0 <= mirror_percent <= 100):
            raise ValueError(f"weight and mirror must be 0..100, got {candidate_weight} and {mirror_percent}")
        rejected: tuple[str, PatchNotApplied] | None = None
        for attempt in range(MAX_WRITE_ATTEMPTS):
            # The object `read` saw (or the cache's copy); after a failed precondition, the server's.
            found = self._seen if attempt == 0 and self._seen is not None else self._get(fresh=attempt > 0)
            self._seen = None
            if found is None:
                return self._not_found()
            version = str(found["metadata"]["resourceVersion"])
            if rejected is not None and rejected[0] == version:
                # The patch failed although the object had not changed: not a race, so not retried.
                raise KubeError(
                    rejected[1].status,
                    f"{self.obj.id}: the API server could not apply the weight patch to an unchanged"
                    f" route: {rejected[1].message}",
                ) from rejected[1]
            located = self._locate(found)
            if isinstance(located, RouteProblem):
                return located
            self._refuse_new_claims(found, located, owner)
            patch = located.patch(version, candidate_weight, mirror_percent)
            if isinstance(patch, RouteProblem):
                return patch
            if owner is not None:
                patch += claim_patch(found, self._keys(located), owner)
            try:
                written = self.kube.json_patch_custom(
                    self.obj.group,
                    self.obj.version,
                    self.obj.namespace,
                    self.obj.plural,
                    self.obj.name,
                    patch,
                )
            except NotFound:
                return self._not_found()
            except Conflict:
                continue
            except PatchNotApplied as rejection:
                # Almost always the resourceVersion `test`: another writer got in between. The next
                # read tells (a new resourceVersion), and the patch is rebuilt on the fresh object.
                rejected = (version, rejection)
                continue
            self._seen = written
            relocated = self._locate(written)
            if isinstance(relocated, RouteProblem):
                return relocated
            return replace(relocated.live(), owners=self._owners(written, relocated))
        raise Conflict(
            None,
            f"{self.obj.id} changed under each of {MAX_WRITE_ATTEMPTS} attempts to set its weights;"
            " giving up for now",
        )

    def _keys(self, located: Located) -> tuple[str, ...]:
        return claim_keys(self.obj.weights_list, located.rule_indexes)

    def _owners(self, found: Mapping[str, Any], located: Located) -> frozenset[RolloutRef]:
        return owners(found, self._keys(located))

    def _refuse_new_claims(
        self, found: Mapping[str, Any], located: Located, owner: RolloutRef | None
    ) -> None:
        """Another rollout's claim that `read` did not see (it came in between, or nothing was read)
        is not for this write to replace: raised as a Conflict, the tick's write fails, and the next
        tick decides on the claim."""
        claimed = self._owners(found, located) - self._read_owners - {owner}
        if claimed:
            names = ", ".join(sorted(str(other) for other in claimed))
            raise Conflict(None, f"{self.obj.id}: the rule is claimed by {names}; not written")

    def _get(self, *, fresh: bool = False) -> dict[str, Any] | None:
        obj = self.obj
        try:
            return self.kube.get_custom(
                obj.group, obj.version, obj.namespace, obj.plural, obj.name, fresh=fresh
            )
        except NotFound:
            return None

    def _not_found(self) -> RouteProblem:
        return RouteProblem(Reason.ROUTE_NOT_FOUND, f"{self.obj.id} not found ({self.obj.field})")
