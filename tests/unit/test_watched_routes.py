"""Which objects wake a rollout: every route its router reads, by kind, from the raw spec."""

from __future__ import annotations

from modelgate.routers.watched import watched_routes


def test_a_single_http_or_grpc_route() -> None:
    assert watched_routes({"gatewayAPI": {"httpRoute": "chat"}}) == {("httproutes", "chat")}
    assert watched_routes({"gatewayAPI": {"grpcRoute": "chat"}}) == {("grpcroutes", "chat")}


def test_several_routes_of_both_kinds() -> None:
    routing = {
        "gatewayAPI": {"routes": [{"httpRoute": "external"}, {"grpcRoute": "internal", "ruleIndex": 1}]}
    }
    assert watched_routes(routing) == {("httproutes", "external"), ("grpcroutes", "internal")}


def test_virtual_services() -> None:
    assert watched_routes({"istio": {"virtualService": "chat"}}) == {("virtualservices", "chat")}
    several = {"istio": {"virtualServices": [{"name": "a"}, {"name": "b", "routes": ["primary"]}]}}
    assert watched_routes(several) == {("virtualservices", "a"), ("virtualservices", "b")}


def test_a_spec_without_a_router_watches_nothing() -> None:
    assert watched_routes({}) == frozenset()
    assert watched_routes({"gatewayAPI": {"routes": None}}) == frozenset()
