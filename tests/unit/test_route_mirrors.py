"""The bed's gateway mirroring: the shares a rule's RequestMirror filters copy, and which requests."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

from testbed.route_mirrors import MirrorSampler, parse_mirrors


def route(*filters: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"rules": [{"filters": list(filters), "backendRefs": [{"name": "chat-v1"}]}]}}


def mirror(name: str, **share: Any) -> dict[str, Any]:
    return {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": name, "port": 8000}, **share}}


def test_reads_percent_fraction_and_the_full_copy() -> None:
    found = parse_mirrors(
        route(
            {"type": "RequestHeaderModifier", "requestHeaderModifier": {}},
            mirror("chat-v2", percent=10),
            mirror("logger", fraction={"numerator": 1, "denominator": 4}),
            mirror("audit"),
        )
    )
    assert found == {"chat-v2": 10.0, "logger": 25.0, "audit": 100.0}


def test_shares_to_one_backend_add_up_to_at_most_everything() -> None:
    assert parse_mirrors(route(mirror("chat-v2", percent=70), mirror("chat-v2", percent=50))) == {
        "chat-v2": 100.0
    }


def test_no_rule_or_no_filters_mirror_nothing() -> None:
    assert parse_mirrors(route(), 0) == {}
    assert parse_mirrors(route(mirror("chat-v2")), rule_index=1) == {}


def test_each_backend_gets_exactly_its_share_spread_evenly() -> None:
    sampler = MirrorSampler()
    sampler.set_mirrors({"chat-v2": 10.0, "audit": 50.0, "off": 0.0})
    picks = [sampler.pick() for _ in range(100)]

    assert Counter(name for chosen in picks for name in chosen) == {"chat-v2": 10, "audit": 50}
    copies_to_v2 = [i for i, chosen in enumerate(picks) if "chat-v2" in chosen]
    assert all(b - a == 10 for a, b in itertools.pairwise(copies_to_v2))  # one in every ten


def test_no_mirrors_copy_nothing() -> None:
    sampler = MirrorSampler()
    assert [sampler.pick() for _ in range(3)] == [[], [], []]
