"""The candidate's RequestMirror filter: read from a rule, and the patch that sets or removes it, applied
here as the API server would (RFC 6902), so the tests look at the rule it leaves."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from modelgate.core import RouteProblem
from modelgate.routers.mirror_filter import CandidateMirrors, candidate_mirrors, mirror_patch

CANDIDATE_REF = {"name": "chat-v2", "port": 8000}
HEADER_FILTER = {
    "type": "RequestHeaderModifier",
    "requestHeaderModifier": {"set": [{"name": "x", "value": "1"}]},
}


def to_candidate(ref: Any) -> bool:
    return bool(ref.get("name") == "chat-v2")


def mirror_to(name: str, **share: Any) -> dict[str, Any]:
    return {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": name, "port": 8000}, **share}}


def rule(*filters: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"backendRefs": [{"name": "chat-v1", "port": 8000}, CANDIDATE_REF]}
    if filters:
        body["filters"] = [copy.deepcopy(f) for f in filters]
    return body


def patched(before: dict[str, Any], percent: int) -> dict[str, Any]:
    """The route holding `before` as its rule 0, after the patch that asks for `percent`."""
    route = {"spec": {"rules": [before]}}
    ops = mirror_patch(
        "rule 0", "/spec/rules/0", before, CANDIDATE_REF, candidate_mirrors(before, to_candidate), percent
    )
    assert not isinstance(ops, RouteProblem), ops
    after: dict[str, Any] = jsonpatch.apply_patch(route, ops)
    return after["spec"]["rules"][0]


def test_reads_the_operators_filter_and_its_percent() -> None:
    found = candidate_mirrors(
        rule(HEADER_FILTER, mirror_to("logger"), mirror_to("chat-v2", percent=15)), to_candidate
    )
    assert found == CandidateMirrors(own_index=2, percent=15, others=())


def test_a_mirror_without_percent_or_fraction_copies_everything() -> None:
    assert candidate_mirrors(rule(mirror_to("chat-v2")), to_candidate).percent == 100


def test_a_rule_without_filters_mirrors_nothing() -> None:
    assert candidate_mirrors(rule(), to_candidate) == CandidateMirrors(None, 0, ())


def test_copies_to_the_candidate_by_fraction_or_twice_are_someone_elses() -> None:
    by_fraction = mirror_to("chat-v2", fraction={"numerator": 1, "denominator": 3})
    assert candidate_mirrors(rule(by_fraction), to_candidate) == CandidateMirrors(None, 0, (0,))
    twice = rule(mirror_to("chat-v2", percent=5), mirror_to("chat-v2", percent=7))
    assert candidate_mirrors(twice, to_candidate) == CandidateMirrors(0, 5, (1,))


def test_setting_a_mirror_on_a_rule_without_filters_adds_the_list() -> None:
    after = patched(rule(), 10)
    assert after["filters"] == [mirror_to("chat-v2", percent=10)]
    assert after["backendRefs"] == rule()["backendRefs"]


def test_setting_a_mirror_appends_it_and_leaves_the_other_filters_alone() -> None:
    after = patched(rule(HEADER_FILTER, mirror_to("logger", percent=50)), 25)
    assert after["filters"] == [
        HEADER_FILTER,
        mirror_to("logger", percent=50),
        mirror_to("chat-v2", percent=25),
    ]


def test_the_mirror_copies_the_candidates_backend_ref() -> None:
    before = rule()
    before["backendRefs"][1] = {"name": "chat-v2", "port": 8080, "kind": "Service", "weight": 0}
    ops = mirror_patch(
        "rule 0",
        "/spec/rules/0",
        before,
        before["backendRefs"][1],
        candidate_mirrors(before, to_candidate),
        5,
    )
    assert not isinstance(ops, RouteProblem)
    added = ops[0]["value"][0]["requestMirror"]["backendRef"]
    assert added == {"name": "chat-v2", "port": 8080, "kind": "Service"}  # never the weight


def test_changing_the_percent_changes_only_the_percent() -> None:
    after = patched(rule(HEADER_FILTER, mirror_to("chat-v2", percent=10)), 40)
    assert after["filters"] == [HEADER_FILTER, mirror_to("chat-v2", percent=40)]


@pytest.mark.parametrize(
    ("filters", "left"),
    [
        pytest.param([mirror_to("chat-v2", percent=10)], None, id="the only filter: no filters left"),
        pytest.param(
            [HEADER_FILTER, mirror_to("chat-v2", percent=10), mirror_to("logger")],
            [HEADER_FILTER, mirror_to("logger")],
            id="among others",
        ),
    ],
)
def test_removing_the_mirror_removes_only_it(
    filters: list[dict[str, Any]], left: list[dict[str, Any]] | None
) -> None:
    after = patched(rule(*filters), 0)
    assert after.get("filters") == left


def test_nothing_to_write_when_the_rule_already_mirrors_as_asked() -> None:
    for filters, percent in [((), 0), ((mirror_to("chat-v2", percent=10),), 10)]:
        before = rule(*filters)
        assert (
            mirror_patch(
                "r", "/spec/rules/0", before, CANDIDATE_REF, candidate_mirrors(before, to_candidate), percent
            )
            == []
        )


def test_someone_elses_copy_to_the_candidate_is_reported_and_left_alone() -> None:
    before = rule(mirror_to("chat-v2", fraction={"numerator": 1}))
    problem = mirror_patch(
        "rule 0 of HTTPRoute serving/chat",
        "/spec/rules/0",
        before,
        CANDIDATE_REF,
        candidate_mirrors(before, to_candidate),
        10,
    )
    assert isinstance(problem, RouteProblem)
    assert "rule 0 of HTTPRoute serving/chat: filters[0]" in problem.message
    # Asking for no mirror leaves it as it is too.
    assert patched(before, 0) == before
