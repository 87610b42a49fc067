"""Several routes moved together as one: a rollout over an internal and an external gateway, or
several rules or VirtualServices. Every target gets each weight (and mirror); when they do not all
carry the same, the route is not live, and which targets differ is said (LiveRoute.differing), so the tick
writes again and reports them. A rollback writes 0 to every target before the tick writes anything
else (the reconciler writes a rollback's weight first)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from modelgate.api import RolloutRef
from modelgate.core import LiveRoute, RouteProblem
from modelgate.kube import KubeError
from modelgate.routers.base import TrafficRouter

Named = tuple[str, LiveRoute]


def agreed(live: Sequence[Named]) -> LiveRoute:
    """One LiveRoute for the weights and mirrors of several targets (name, route), in order. When
    they differ, the weights shown are those of the first target another writer changed, else of the
    first that differs from the first target: so that an overwrite is noticed (and held against,
    never fought) as on a single route, and a write that did not take is never taken as live."""
    first = live[0][1]
    writer = next((route.other_writer for _, route in live if route.other_writer), None)
    owners = frozenset().union(*(route.owners for _, route in live))
    differing = [
        (name, route) for name, route in live if route.differing or _carried(route) != _carried(first)
    ]
    if not differing:
        return replace(first, other_writer=writer, owners=owners)
    _, shown = next(((n, r) for n, r in live if r.other_writer), differing[0])
    carried = ", ".join(f"{name} carries {_describe(route)}" for name, route in live)
    return replace(
        shown,
        other_writer=writer,
        owners=owners,
        differing=f"the routes moved together differ in what goes to the candidate: {carried}",
    )


def _carried(route: LiveRoute) -> tuple[int, int, int]:
    return route.incumbent_weight, route.candidate_weight, route.mirror_percent


def _describe(route: LiveRoute) -> str:
    mirror = f" and a {route.mirror_percent}% mirror" if route.mirror_percent else ""
    within = f" ({route.differing})" if route.differing else ""
    return f"{route.candidate_weight}{mirror}{within}"


class GroupRouter:
    """A TrafficRouter over several, each named for messages (e.g. "HTTPRoute chat rule 0")."""

    def __init__(self, routers: Sequence[tuple[str, TrafficRouter]]) -> None:
        if len(routers) < 2:
            raise ValueError("a group moves at least two routes")
        self.routers = list(routers)

    def read(self) -> LiveRoute | RouteProblem:
        live: list[Named] = []
        for name, router in self.routers:
            route = router.read()
            if isinstance(route, RouteProblem):
                return route
            live.append((name, route))
        return agreed(live)

    def set_weights(
        self, candidate_weight: int, mirror_percent: int = 0, owner: RolloutRef | None = None
    ) -> LiveRoute | RouteProblem:
        """Writes every target, whatever happens to the others; returns the weights when all took,
        else which did not (`differing`). A target that vanished since `read` is a RouteProblem
        (after the others were written); should every write fail, the first error is raised, as a
        single router would."""
        written: list[Named] = []
        failed: list[tuple[str, KubeError]] = []
        problem: RouteProblem | None = None
        for name, router in self.routers:
            try:
                result = router.set_weights(candidate_weight, mirror_percent, owner)
            except KubeError as error:  # Conflict included: the other targets are written all the same
                failed.append((name, error))
                continue
            if isinstance(result, RouteProblem):
                problem = problem or result
            else:
                written.append((name, result))
        if problem is not None:
            return problem
        if not written:
            raise failed[0][1]
        owners = frozenset().union(*(route.owners for _, route in written))
        asked = LiveRoute(
            100 - candidate_weight, candidate_weight, mirror_percent=mirror_percent, owners=owners
        )
        missed = [(name, route) for name, route in written if _carried(route) != _carried(asked)]
        not_taken = [f"{name} carries {_describe(route)}" for name, route in missed]
        not_taken += [f"{name} could not be written ({error.message})" for name, error in failed]
        if not not_taken:
            return asked
        shown = missed[0][1] if missed else written[0][1]
        return replace(shown, differing=f"not every route moved together took it: {', '.join(not_taken)}")
