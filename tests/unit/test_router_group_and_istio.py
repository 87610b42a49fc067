"""Pure parts of the composite and Istio routers: combining several targets' weights, finding two
destinations in a VirtualService, and the driver's reading of the same."""

from __future__ import annotations

from typing import Any

import pytest

from modelgate.api import IstioRouting, RolloutRef
from modelgate.core import LiveRoute, RouteProblem
from modelgate.kube import Conflict, KubeError
from modelgate.routers.group import GroupRouter, agreed
from modelgate.routers.istio import HttpRoutePairs, locate_destinations
from testbed.route_kinds import virtual_service_weights

ROUTING = IstioRouting.model_validate(
    {
        "virtualService": "chat",
        "routes": ["primary"],
        "incumbentDestination": {"host": "chat-v1"},
        "candidateDestination": {"host": "chat", "subset": "v2"},
    }
)
(REF,) = ROUTING.virtual_service_refs


def service(*http: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "chat", "namespace": "serving"}, "spec": {"http": list(http)}}


def split(name: str, incumbent: int | None, candidate: int | None) -> dict[str, Any]:
    return {
        "name": name,
        "route": [
            {"destination": {"host": "chat-v1"}, **({} if incumbent is None else {"weight": incumbent})},
            {
                "destination": {"host": "chat", "subset": "v2"},
                **({} if candidate is None else {"weight": candidate}),
            },
        ],
    }


def test_agreeing_targets_read_as_one() -> None:
    assert agreed([("a", LiveRoute(80, 20)), ("b", LiveRoute(80, 20, "argocd"))]) == LiveRoute(
        80, 20, "argocd"
    )


def test_differing_targets_are_named_and_show_the_overwritten_one() -> None:
    live = agreed([("a", LiveRoute(80, 20)), ("b", LiveRoute(50, 50, "argocd")), ("c", LiveRoute(80, 20))])
    assert (live.incumbent_weight, live.candidate_weight, live.other_writer) == (50, 50, "argocd")
    assert live.differing is not None and "a carries 20, b carries 50, c carries 20" in live.differing


def test_a_write_that_did_not_take_on_one_target_shows_that_one() -> None:
    live = agreed([("a", LiveRoute(80, 20)), ("b", LiveRoute(90, 10))])
    assert (live.candidate_weight, live.other_writer) == (10, None)
    assert live.differing is not None


def test_destinations_of_the_named_http_route() -> None:
    found = locate_destinations(
        service(split("other", 100, 0), split("primary", 70, 30)), REF, ROUTING, "spec.x"
    )
    assert isinstance(found, HttpRoutePairs)
    assert found.live() == LiveRoute(70, 30)
    assert found.patch("7", 40, 0)[1:] == [
        {"op": "add", "path": "/spec/http/1/route/0/weight", "value": 60},
        {"op": "add", "path": "/spec/http/1/route/1/weight", "value": 40},
    ]


def test_a_missing_http_route_or_destination_names_the_field() -> None:
    missing = locate_destinations(service(split("other", 100, 0)), REF, ROUTING, "spec.trafficRouting.istio")
    assert isinstance(missing, RouteProblem) and missing.reason == "RuleNotFound"
    assert "spec.trafficRouting.istio.routes" in missing.message
    without_subset = service(
        {
            "name": "primary",
            "route": [{"destination": {"host": "chat-v1"}}, {"destination": {"host": "chat"}}],
        }
    )
    problem = locate_destinations(without_subset, REF, ROUTING, "spec.trafficRouting.istio")
    assert isinstance(problem, RouteProblem) and problem.reason == "BackendNotFound"
    assert "spec.trafficRouting.istio.candidateDestination" in problem.message


def test_several_http_routes_without_names_in_the_spec_are_ambiguous() -> None:
    unnamed = IstioRouting.model_validate(
        ROUTING.model_dump(by_alias=True, exclude_none=True) | {"routes": None}
    )
    (ref,) = unnamed.virtual_service_refs
    problem = locate_destinations(
        service(split("a", 1, 0), split("b", 1, 0)), ref, unnamed, "spec.trafficRouting.istio"
    )
    assert isinstance(problem, RouteProblem) and "name the ones to move" in problem.message


def test_the_driver_reads_destination_weights_by_host_and_subset() -> None:
    assert virtual_service_weights(service(split("primary", 70, None)), "primary") == {
        "chat-v1": 70,
        "chat/v2": 0,
    }
    lone = service({"route": [{"destination": {"host": "chat-v1"}}]})
    assert virtual_service_weights(lone) == {"chat-v1": 100}


def test_targets_that_differ_in_their_mirror_alone_differ() -> None:
    live = agreed([("a", LiveRoute(100, 0, mirror_percent=10)), ("b", LiveRoute(100, 0))])
    assert live.mirror_percent == 0
    assert live.differing is not None and "a carries 0 and a 10% mirror, b carries 0" in live.differing


def test_a_target_that_differs_within_makes_the_group_differ() -> None:
    inner = LiveRoute(80, 20, differing="http route b carries 10")
    live = agreed([("a", inner), ("b", LiveRoute(80, 20))])
    assert live.differing is not None and "http route b carries 10" in live.differing


class FakeRouter:
    """Stores the weight it is given, or carries `stuck_at`, or raises `error`."""

    def __init__(self, stuck_at: int | None = None, error: KubeError | None = None) -> None:
        self.weight = 0
        self.mirror = 0
        self.stuck_at = stuck_at
        self.error = error

    def read(self) -> LiveRoute | RouteProblem:
        return LiveRoute(100 - self.weight, self.weight, mirror_percent=self.mirror)

    def set_weights(
        self, candidate_weight: int, mirror_percent: int = 0, owner: RolloutRef | None = None
    ) -> LiveRoute | RouteProblem:
        if self.error is not None:
            raise self.error
        self.weight = candidate_weight if self.stuck_at is None else self.stuck_at
        self.mirror = mirror_percent
        return self.read()


def test_a_group_writes_every_target_and_names_those_that_did_not_take() -> None:
    routers = [
        FakeRouter(),
        FakeRouter(error=Conflict(409, "changed under every attempt")),
        FakeRouter(stuck_at=5),
    ]
    group = GroupRouter([("a", routers[0]), ("b", routers[1]), ("c", routers[2])])

    written = group.set_weights(0)  # a rollback: every target is tried, whatever the others did

    assert isinstance(written, LiveRoute) and written.candidate_weight == 5
    assert written.differing is not None
    assert "b could not be written (changed under every attempt)" in written.differing
    assert "c carries 5" in written.differing and "a carries" not in written.differing
    assert routers[0].weight == 0


def test_a_group_whose_every_write_failed_raises_as_one_router_would() -> None:
    group = GroupRouter(
        [("a", FakeRouter(error=KubeError(503, "down"))), ("b", FakeRouter(error=KubeError(503, "down")))]
    )
    with pytest.raises(KubeError):
        group.set_weights(20)


def test_a_group_that_took_the_weight_everywhere_is_live() -> None:
    group = GroupRouter([("a", FakeRouter()), ("b", FakeRouter())])
    assert group.set_weights(20) == LiveRoute(80, 20)
    assert group.read() == LiveRoute(80, 20)
    assert group.set_weights(0, mirror_percent=10) == LiveRoute(100, 0, mirror_percent=10)
    assert group.read() == LiveRoute(100, 0, mirror_percent=10)
