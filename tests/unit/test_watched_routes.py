"""Which objects wake a rollout: every route its router reads, by kind, from the spec's router
section read through that router's config model."""

from __future__ import annotations

from typing import Any

from modelgate.routers.watched import watched_routes

BACKENDS = {"incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}
DESTINATIONS = {"incumbentDestination": {"host": "chat-v1"}, "candidateDestination": {"host": "chat-v2"}}


def gateway(**refs: Any) -> dict[str, Any]:
    return {"gatewayAPI": {**refs, **BACKENDS}}


def istio(**refs: Any) -> dict[str, Any]:
    return {"istio": {**refs, **DESTINATIONS}}


def test_a_single_http_or_grpc_route() -> None:
    assert watched_routes(gateway(httpRoute="chat")) == {("httproutes", "chat")}
    assert watched_routes(gateway(grpcRoute="chat")) == {("grpcroutes", "chat")}


def test_several_routes_of_both_kinds() -> None:
    routing = gateway(routes=[{"httpRoute": "external"}, {"grpcRoute": "internal", "ruleIndex": 1}])
    assert watched_routes(routing) == {("httproutes", "external"), ("grpcroutes", "internal")}


def test_virtual_services() -> None:
    assert watched_routes(istio(virtualService="chat")) == {("virtualservices", "chat")}
    several = istio(virtualServices=[{"name": "a"}, {"name": "b", "routes": ["primary"]}])
    assert watched_routes(several) == {("virtualservices", "a"), ("virtualservices", "b")}


def test_a_spec_without_a_router_watches_nothing() -> None:
    assert watched_routes({}) == frozenset()
    assert watched_routes({"gatewayAPI": None}) == frozenset()


def test_a_router_section_its_model_refuses_names_nothing() -> None:
    # The rollout fails on such a section, naming the field; nothing it names is read.
    assert watched_routes(gateway(routes=None)) == frozenset()
    assert watched_routes(gateway(httpRoute="chat", grpcRoute="chat")) == frozenset()
    assert watched_routes({"gatewayAPI": {"httpRoute": "chat"}}) == frozenset()  # no backends
