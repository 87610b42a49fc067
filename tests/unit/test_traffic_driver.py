"""The traffic driver without a cluster: weight parsing, the loopback rule, the scheduler's split,
and the driver itself against in-process model server doubles."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.model_server_double import Behaviour, start_model_server
from testbed.traffic_driver import (
    RouteError,
    SmoothWeightedRoundRobin,
    TrafficDriver,
    TrafficStats,
    parse_backend_arg,
    parse_backend_weights,
    require_loopback_url,
)


def route(*rules: list[dict[str, Any]]) -> dict[str, Any]:
    """An HTTPRoute whose rules have the given backendRefs."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "chat", "namespace": "llm"},
        "spec": {"rules": [{"backendRefs": refs} for refs in rules]},
    }


def test_weights_in_route_order() -> None:
    refs = [{"name": "chat-v1", "port": 8000, "weight": 90}, {"name": "chat-v2", "port": 8000, "weight": 10}]
    assert parse_backend_weights(route(refs)) == {"chat-v1": 90, "chat-v2": 10}


def test_missing_weight_is_one() -> None:
    assert parse_backend_weights(route([{"name": "chat-v1"}, {"name": "chat-v2", "weight": 3}])) == {
        "chat-v1": 1,
        "chat-v2": 3,
    }


def test_zero_weight_is_kept_but_never_picked() -> None:
    weights = parse_backend_weights(
        route([{"name": "chat-v1", "weight": 1}, {"name": "chat-v2", "weight": 0}])
    )
    assert weights == {"chat-v1": 1, "chat-v2": 0}
    scheduler = SmoothWeightedRoundRobin(weights)
    assert {scheduler.pick() for _ in range(10)} == {"chat-v1"}


def test_selects_the_rule_by_index() -> None:
    two_rules = route(
        [{"name": "chat-v1"}], [{"name": "chat-v1", "weight": 50}, {"name": "chat-v2", "weight": 50}]
    )
    assert parse_backend_weights(two_rules, rule_index=1) == {"chat-v1": 50, "chat-v2": 50}


def test_missing_rule_index_is_a_clear_error() -> None:
    with pytest.raises(RouteError, match=r"HTTPRoute chat has 1 rule\(s\); rule index 2 does not exist"):
        parse_backend_weights(route([{"name": "chat-v1"}]), rule_index=2)


def test_route_without_rules_is_a_clear_error() -> None:
    with pytest.raises(RouteError, match="has 0 rule"):
        parse_backend_weights({"metadata": {"name": "chat"}, "spec": {}})


def test_rule_without_backends_routes_nothing() -> None:
    assert parse_backend_weights({"metadata": {"name": "chat"}, "spec": {"rules": [{}]}}) == {}


def test_refs_to_the_same_backend_add_up() -> None:
    assert parse_backend_weights(
        route([{"name": "chat-v1", "weight": 2}, {"name": "chat-v1", "weight": 3}])
    ) == {"chat-v1": 5}


@pytest.mark.parametrize("weight", [-1, 1.5, "10", True])
def test_invalid_weight_names_the_backend(weight: object) -> None:
    with pytest.raises(RouteError, match="backend chat-v2 has invalid weight"):
        parse_backend_weights(route([{"name": "chat-v1"}, {"name": "chat-v2", "weight": weight}]))


def test_backend_ref_without_name_is_an_error() -> None:
    with pytest.raises(RouteError, match="has no name"):
        parse_backend_weights(route([{"weight": 1}]))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000"),
        ("http://127.0.0.2:9000", "http://127.0.0.2:9000"),
        ("http://[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_loopback_urls_are_accepted(url: str, expected: str) -> None:
    assert require_loopback_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.7:8000",
        "http://192.168.1.2",
        "http://example.com:8000",
        "http://localhost:8000",  # a name could resolve anywhere
        "https://127.0.0.1:8000",
        "127.0.0.1:8000",
    ],
)
def test_other_urls_are_rejected(url: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        require_loopback_url(url)


def test_driver_refuses_non_loopback_targets() -> None:
    with pytest.raises(ValueError, match="loopback"):
        TrafficDriver({"chat-v1": ["http://127.0.0.1:8000"], "chat-v2": ["http://10.1.2.3:8000"]})


def test_backend_argument() -> None:
    assert parse_backend_arg("chat-v1=http://127.0.0.1:1234") == ("chat-v1", "http://127.0.0.1:1234")
    with pytest.raises(ValueError, match="NAME=URL"):
        parse_backend_arg("http://127.0.0.1:1234")
    with pytest.raises(ValueError, match="loopback"):
        parse_backend_arg("chat-v1=http://10.0.0.1:1234")


def test_ninety_ten_split_is_exact_and_smooth() -> None:
    scheduler = SmoothWeightedRoundRobin({"chat-v1": 90, "chat-v2": 10})
    picks = [scheduler.pick() for _ in range(100)]

    assert Counter(picks) == {"chat-v1": 90, "chat-v2": 10}
    # Interleaved, not bunched: every run of ten consecutive picks holds exactly one chat-v2.
    assert all(picks[i : i + 10].count("chat-v2") == 1 for i in range(91))


def test_all_zero_weights_pick_nothing() -> None:
    assert SmoothWeightedRoundRobin({"chat-v1": 0, "chat-v2": 0}).pick() is None
    assert SmoothWeightedRoundRobin().pick() is None


def test_new_weights_restart_the_cycle() -> None:
    scheduler = SmoothWeightedRoundRobin({"chat-v1": 1, "chat-v2": 1})
    scheduler.pick()
    scheduler.set_weights({"chat-v1": 3, "chat-v2": 1})
    assert Counter(scheduler.pick() for _ in range(4)) == {"chat-v1": 3, "chat-v2": 1}


@settings(derandomize=True, max_examples=200, deadline=None)
@given(weights=st.lists(st.integers(min_value=0, max_value=200), min_size=1, max_size=6))
def test_every_cycle_gives_each_backend_exactly_its_weight(weights: list[int]) -> None:
    named = {f"backend-{i}": weight for i, weight in enumerate(weights)}
    scheduler = SmoothWeightedRoundRobin(named)
    for _ in range(2):
        picks = Counter(scheduler.pick() for _ in range(sum(weights)))
        assert picks == {name: weight for name, weight in named.items() if weight > 0}


def drive_doubles(
    weights: dict[str, int], max_requests: int, mirrors: dict[str, float] | None = None
) -> tuple[TrafficStats, dict[str, str]]:
    """Runs a driver against two in-process doubles, chat-v1 and chat-v2; returns its stats and
    each double's /metrics text."""

    async def run() -> tuple[TrafficStats, dict[str, str]]:
        doubles = {
            name: await start_model_server(Behaviour(), model_name=name) for name in ("chat-v1", "chat-v2")
        }
        try:
            driver = TrafficDriver({name: [double.url] for name, double in doubles.items()}, rps=1000)
            driver.set_weights(weights)
            driver.set_mirrors(mirrors or {})
            stats = await driver.run(max_requests=max_requests)
            return stats, {
                name: double.double.metrics.exposition().decode() for name, double in doubles.items()
            }
        finally:
            for double in doubles.values():
                await double.close()

    return asyncio.run(run())


def test_driver_splits_traffic_by_weight() -> None:
    stats, metrics = drive_doubles({"chat-v1": 3, "chat-v2": 1}, max_requests=40)

    assert stats.sent == {"chat-v1": 30, "chat-v2": 10}
    assert stats.responses == {("chat-v1", 200): 30, ("chat-v2", 200): 10}
    assert not stats.failed
    assert 'status="200"} 30.0' in metrics["chat-v1"]
    assert 'status="200"} 10.0' in metrics["chat-v2"]


def test_a_mirror_copies_its_share_to_the_candidate_and_the_client_gets_the_incumbents_answers() -> None:
    stats, metrics = drive_doubles({"chat-v1": 1, "chat-v2": 0}, max_requests=40, mirrors={"chat-v2": 25})

    assert stats.responses == {("chat-v1", 200): 40}  # every answer a client got
    assert stats.mirrored == {"chat-v2": 10}
    assert 'status="200"} 10.0' in metrics["chat-v2"]  # the double saw the copies


def test_backend_without_url_is_unroutable() -> None:
    stats, _ = drive_doubles({"chat-v1": 1, "chat-v3": 1}, max_requests=10)

    assert stats.sent == {"chat-v1": 5}
    assert stats.unroutable == 5


def test_driver_stops_on_request_and_by_duration() -> None:
    async def run() -> tuple[TrafficStats, TrafficStats]:
        double = await start_model_server(Behaviour())
        try:
            stopped = TrafficDriver({"chat-v1": [double.url]}, rps=200)
            stopped.set_weights({"chat-v1": 1})
            running = asyncio.create_task(stopped.run())
            deadline = asyncio.get_running_loop().time() + 10
            while stopped.stats.sent["chat-v1"] < 5:
                assert asyncio.get_running_loop().time() < deadline, "driver sent nothing"
                await asyncio.sleep(0.01)
            stopped.stop()
            timed = TrafficDriver({"chat-v1": [double.url]}, rps=50)
            timed.set_weights({"chat-v1": 1})
            return await running, await timed.run(duration=0.2)
        finally:
            await double.close()

    stopped, timed = asyncio.run(run())

    assert stopped.sent["chat-v1"] >= 5
    assert stopped.responses[("chat-v1", 200)] == stopped.sent["chat-v1"]  # in-flight answers awaited
    # Ticks come at most once per interval from the start: 0.2 s at 50/s is at most 10.
    assert 1 <= timed.sent["chat-v1"] <= 10


def test_current_weights_are_a_copy() -> None:
    driver = TrafficDriver({"chat-v1": ["http://127.0.0.1:8000"]})
    driver.set_weights({"chat-v1": 1, "chat-v2": 0})
    driver.current_weights()["chat-v1"] = 7
    assert driver.current_weights() == {"chat-v1": 1, "chat-v2": 0}
