"""A router is one record: registering a RouterKind (here a throwaway one, defined in this test) is
enough for the operator to watch and cache its objects, build it, default a gate check to its
Service, and for `make generate` to grant its RBAC in the chart; and the committed chart holds what
the registered routers' records generate."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api import RolloutRef, TrafficRouting, parse_spec
from modelgate.api.series import SeriesSide
from modelgate.api.specmodel import SpecModel
from modelgate.core import LiveRoute, RouteProblem
from modelgate.kube import Kube
from modelgate.routers import ROUTERS, SideKinds, TrafficRouter, backend_service, router_for
from modelgate.routers.router_kind import RouteKey, RouteResource, RouterKind
from modelgate.routers.watched import route_resources, watched_routes
from testbed.manifests import model_rollout
from testbed.versions import REPO_ROOT
from tests.unit import test_chart
from tests.unit.test_docs_security import EVERY_RIGHT, rendered_rights
from tooling import router_rbac_gen

SPLITTERS = RouteResource("splits.example.com", "v1", "splitters")


class SplitterRouting(SpecModel):
    splitter: str
    incumbent_service: str
    candidate_service: str


class SplitterRouter:
    def __init__(self, namespace: str, config: SplitterRouting) -> None:
        self.namespace, self.config = namespace, config

    def read(self) -> LiveRoute | RouteProblem:
        return LiveRoute(100, 0)

    def set_weights(
        self, candidate_weight: int, mirror_percent: int = 0, owner: RolloutRef | None = None
    ) -> LiveRoute | RouteProblem:
        return LiveRoute(100 - candidate_weight, candidate_weight)


def splitter_router(kube: Kube, namespace: str, config: SplitterRouting, kinds: SideKinds) -> TrafficRouter:
    return SplitterRouter(namespace, config)


def named_splitters(config: SplitterRouting) -> list[RouteKey]:
    return [(SPLITTERS.plural, config.splitter)]


def splitter_service(config: SplitterRouting, side: SeriesSide) -> str:
    return config.candidate_service if side == "candidate" else config.incumbent_service


THROWAWAY = RouterKind(
    key="splitter",
    config=SplitterRouting,
    resources=(SPLITTERS,),
    named_routes=named_splitters,
    backend_service=splitter_service,
    factory=splitter_router,
    what_it_writes="Splitters: two weights",
)
CONFIG = SplitterRouting(splitter="chat", incumbent_service="chat-old", candidate_service="chat-new")


class SplitterSpecRouting(TrafficRouting):
    """spec.trafficRouting as it would be with the throwaway router's field."""

    splitter: SplitterRouting | None = None


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ROUTERS, THROWAWAY.key, THROWAWAY)  # the one registry line


def test_a_registered_router_is_watched_and_cached(registered: None) -> None:
    assert SPLITTERS in route_resources()
    raw = {"splitter": CONFIG.model_dump(by_alias=True)}
    assert watched_routes(raw) == {("splitters", "chat")}
    assert watched_routes({"splitter": {"splitter": "chat"}}) == frozenset()  # refused by its model


def test_a_registered_router_is_built_and_picks_the_gate_service(registered: None) -> None:
    routing = SplitterSpecRouting(splitter=CONFIG)
    router = router_for(routing, Kube(client.ApiClient()), "serving")
    assert isinstance(router, SplitterRouter)
    assert (router.namespace, router.config) == ("serving", CONFIG)
    spec = parse_spec(model_rollout("chat", "serving", steps=[{"setWeight": 50}])["spec"])
    spec = spec.model_copy(update={"traffic_routing": routing})
    assert backend_service(spec, "candidate") == "chat-new"
    assert backend_service(spec, "incumbent") == "chat-old"


@pytest.mark.parametrize("scope", sorted(EVERY_RIGHT))
def test_make_generate_grants_a_registered_routers_rbac(
    registered: None, scope: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chart = tmp_path / router_rbac_gen.RULES_FILE.parents[1]
    shutil.copytree(REPO_ROOT / router_rbac_gen.RULES_FILE.parents[1], chart)
    assert router_rbac_gen.main(["--root", str(tmp_path)]) == 0
    monkeypatch.setattr(test_chart, "CHART", chart)
    rights = rendered_rights(EVERY_RIGHT[scope])
    granted = {
        verb for group, resource, verb in rights if (group, resource) == (SPLITTERS.group, "splitters")
    }
    assert granted == {"get", "list", "watch", "patch"}


def test_the_committed_router_rbac_is_what_make_generate_writes() -> None:
    for path, content in router_rbac_gen.generated_files().items():
        assert (REPO_ROOT / path).read_text() == content, f"{path} is stale: run `make generate`"
