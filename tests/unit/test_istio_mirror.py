"""The candidate's mirror in an Istio http route: read from the route, and the patch that sets or removes
it, applied here as the API server would (RFC 6902), so the tests look at the http route it leaves; and
the bed's reading of the same mirrors."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from modelgate.core import RouteProblem
from modelgate.routers.istio_mirror import NO_MIRROR, HttpMirror, http_mirror, http_mirror_patch
from testbed.route_kinds import virtual_service_mirrors

CANDIDATE = {"host": "chat", "subset": "v2", "port": {"number": 8000}}
ROUTE = [{"destination": {"host": "chat-v1"}, "weight": 100}, {"destination": CANDIDATE, "weight": 0}]


def to_candidate(destination: Any) -> bool:
    return bool(destination.get("host") == "chat" and destination.get("subset") == "v2")


def http(**fields: Any) -> dict[str, Any]:
    return {"name": "primary", "route": copy.deepcopy(ROUTE), **copy.deepcopy(fields)}


def patched(before: dict[str, Any], percent: int) -> dict[str, Any]:
    """The VirtualService holding `before` as its http route 0, after the patch that asks for `percent`."""
    service = {"spec": {"http": [before]}}
    ops = http_mirror_patch(
        "http route primary", "/spec/http/0", before, CANDIDATE, http_mirror(before, to_candidate), percent
    )
    assert not isinstance(ops, RouteProblem), ops
    after: dict[str, Any] = jsonpatch.apply_patch(service, ops)
    return after["spec"]["http"][0]


def test_reads_the_operators_mirror_and_its_percentage() -> None:
    assert http_mirror(http(mirror=CANDIDATE, mirrorPercentage={"value": 15}), to_candidate) == HttpMirror(
        own=True, percent=15, taken_by=None
    )
    assert http_mirror(http(mirror=CANDIDATE), to_candidate).percent == 100  # Istio: all without a share
    assert http_mirror(http(), to_candidate) == NO_MIRROR


@pytest.mark.parametrize(
    "fields",
    [
        {"mirror": {"host": "logger"}},
        {"mirror": CANDIDATE, "mirrorPercentage": {"value": 12.5}},
        {"mirror": CANDIDATE, "mirrorPercent": 20},
        {"mirrors": [{"destination": {"host": "logger"}}, {"destination": CANDIDATE}]},
    ],
    ids=["mirror-elsewhere", "fractional-share", "deprecated-percent", "mirrors-entry"],
)
def test_someone_elses_copy_is_reported_and_left_alone(fields: dict[str, Any]) -> None:
    before = http(**fields)
    found = http_mirror(before, to_candidate)
    assert found.percent == 0 and found.taken_by is not None
    problem = http_mirror_patch("http route primary", "/spec/http/0", before, CANDIDATE, found, 10)
    assert isinstance(problem, RouteProblem) and problem.reason == "WeightNotApplied"
    assert problem.message.startswith("http route primary: ")


def test_setting_a_mirror_writes_the_candidates_destination_and_its_share() -> None:
    after = patched(http(), 10)
    assert after == http(mirror=CANDIDATE, mirrorPercentage={"value": 10})


def test_changing_the_share_leaves_the_destination() -> None:
    after = patched(http(mirror=CANDIDATE, mirrorPercentage={"value": 10}), 25)
    assert after == http(mirror=CANDIDATE, mirrorPercentage={"value": 25})


def test_removing_the_mirror_removes_what_is_there_and_nothing_else() -> None:
    assert patched(http(mirror=CANDIDATE, mirrorPercentage={"value": 10}), 0) == http()
    assert patched(http(mirror=CANDIDATE), 0) == http()  # no share to remove
    entry = {"destination": {"host": "logger"}, "percentage": {"value": 5}}
    assert patched(http(mirror=CANDIDATE, mirrors=[entry]), 0) == http(mirrors=[entry])


def test_the_same_share_is_no_operation() -> None:
    before = http(mirror=CANDIDATE, mirrorPercentage={"value": 10})
    assert (
        http_mirror_patch("h", "/spec/http/0", before, CANDIDATE, http_mirror(before, to_candidate), 10) == []
    )


def test_the_bed_copies_by_mirror_and_mirrors_entries() -> None:
    service = {
        "metadata": {"name": "chat"},
        "spec": {
            "http": [
                http(
                    mirror=CANDIDATE,
                    mirrorPercentage={"value": 10},
                    mirrors=[
                        {"destination": {"host": "logger"}},
                        {"destination": CANDIDATE, "percentage": {"value": 95}},
                    ],
                )
            ]
        },
    }
    assert virtual_service_mirrors(service, "primary") == {"chat/v2": 100.0, "logger": 100.0}
    assert virtual_service_mirrors({"spec": {"http": [http()]}}) == {}
