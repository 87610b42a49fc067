"""Several routes moved together as one: a rollout over an internal and an external gateway, or
several rules or VirtualServices. Every target gets each weight; when they do not all carry the same
weights, the route is not live, and which targets differ is said (LiveRoute.differing), so the tick
writes again and reports them. A rollback writes 0 to every target before the tick writes anything
else (the reconciler writes a rollback's weight first)."""

from __future__ import annotations

from collections.abc import Sequence

from modelgate.core import LiveRoute, RouteProblem
from modelgate.kube import KubeError
from modelgate.routers.base import TrafficRouter

Named = tuple[str, LiveRoute]


def agreed(live: Sequence[Named]) -> LiveRoute:
    """One LiveRoute for the weights of several targets (name, weights), in order. When they
    differ, the weights shown are those of the first target another writer changed, else of the
    first that differs from the first target: so that an overwrite is noticed (and held against,
    never fought) as on a single route, and a write that did not take is never taken as live."""
    first = live[0][1]
    writer = next((route.other_writer for _, route in live if route.other_writer), None)
    differing = [(name, route) for name, route in live if _weights(route) != _weights(first)]
    if not differing:
        return LiveRoute(first.incumbent_weight, first.candidate_weight, writer)
    _, shown = next(((n, r) for n, r in live if r.other_writer), differing[0])
    carried = ", ".join(f"{name} carries {route.candidate_weight}" for name, route in live)
    return LiveRoute(
        shown.incumbent_weight,
        shown.candidate_weight,
        writer,
        differing=f"the routes moved together differ in the candidate's weight: {carried}",
    )


def _weights(route: LiveRoute) -> tuple[int, int]:
    return route.incumbent_weight, route.candidate_weight


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

    def set_weights(self, candidate_weight: int) -> LiveRoute | RouteProblem:
        """Writes every target, whatever happens to the others; returns the weights when all took,
        else which did not (`differing`). A target that vanished since `read` is a RouteProblem
        (after the others were written); should every write fail, the first error is raised, as a
        single router would."""
        written: list[Named] = []
        failed: list[tuple[str, KubeError]] = []
        problem: RouteProblem | None = None
        for name, router in self.routers:
            try:
                result = router.set_weights(candidate_weight)
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
        not_taken = [
            f"{name} carries {route.candidate_weight}"
            for name, route in written
            if route.candidate_weight != candidate_weight
        ]
        not_taken += [f"{name} could not be written ({error.message})" for name, error in failed]
        if not not_taken:
            return LiveRoute(100 - candidate_weight, candidate_weight)
        shown = next(
            (route for _, route in written if route.candidate_weight != candidate_weight), written[0][1]
        )
        return LiveRoute(
            shown.incumbent_weight,
            shown.candidate_weight,
            differing=f"not every route moved together took it: {', '.join(not_taken)}",
        )
