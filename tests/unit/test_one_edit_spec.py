"""spec.candidatePatch: a spec names a candidate or a patch of the incumbent (never both, never
neither), the patch's candidate and its Service are generated names the spec reads as if written,
and a changed patch is a new candidate."""

from __future__ import annotations

import re
from typing import Any

import pytest

from modelgate.api import InvalidSpecError, parse_spec
from modelgate.api.candidate_patch import (
    GENERATED_NAME_LENGTH,
    AfterPromotion,
    CandidatePatch,
    generated_name,
)


def one_edit(**patch: Any) -> dict[str, Any]:
    return {
        "incumbent": {"deployment": "chat-v1"},
        "candidatePatch": patch or {"image": "vllm/vllm-openai:v0.9"},
        "trafficRouting": {"gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1"}},
        "steps": [{"setWeight": 20}],
    }


def problems(spec: dict[str, Any]) -> str:
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(spec)
    return "; ".join(caught.value.problems)


def test_a_patch_stands_for_a_generated_candidate_and_its_service() -> None:
    spec = parse_spec(one_edit(image="vllm:2", model="llama-3.1-8b"))
    name = spec.candidate.deployment
    assert name is not None and name.startswith("chat-v1-")
    routing = spec.traffic_routing.gateway_api
    assert routing is not None and routing.candidate_backend == name
    assert spec.candidate.model == "llama-3.1-8b"  # the reported model follows the patch
    assert spec.candidate_patch is not None
    assert spec.candidate_patch.after_promotion is AfterPromotion.PROMOTE_INTO_INCUMBENT


def test_a_changed_patch_is_a_new_candidate_and_after_promotion_is_not() -> None:
    first = parse_spec(one_edit(image="vllm:2")).candidate.identity
    assert parse_spec(one_edit(image="vllm:3")).candidate.identity != first
    assert parse_spec(one_edit(image="vllm:2", afterPromotion="RetireIncumbent")).candidate.identity == first


def test_a_parsed_one_edit_spec_survives_its_own_dump() -> None:
    spec = parse_spec(one_edit(args=["--max-model-len", "4096"]))
    again = parse_spec(spec.model_dump(by_alias=True, exclude_none=True, mode="json"))
    assert again == spec


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        (lambda s: s.update(candidate={"deployment": "chat-v2"}), "spec", "exactly one of candidate"),
        (lambda s: s.pop("candidatePatch"), "spec", "exactly one of candidate"),
        (lambda s: s.update(incumbent={"inferencePool": "chat"}), "spec.candidatePatch", "Deployment"),
        (lambda s: s["candidatePatch"].clear(), "spec.candidatePatch", "at least one of image"),
        (
            lambda s: s["trafficRouting"]["gatewayAPI"].update(candidateBackend="mine"),
            "spec.trafficRouting.gatewayAPI.candidateBackend",
            "must be absent",
        ),
        (
            lambda s: s.update(trafficRouting={"istio": {"virtualService": "chat"}}),
            "spec.candidatePatch",
            "gatewayAPI",
        ),
        (
            lambda s: s["candidatePatch"].update(
                env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]
            ),
            "spec.candidatePatch.env",
            "twice",
        ),
    ],
)
def test_a_bad_one_edit_spec_names_its_field(change: Any, field: str, reason: str) -> None:
    spec = one_edit()
    change(spec)
    said = problems(spec)
    assert re.search(rf"{re.escape(field)}(\.[\w.]+)?: [^;]*{re.escape(reason)}", said), said


def test_a_named_candidate_still_needs_its_backend() -> None:
    spec = one_edit()
    spec.pop("candidatePatch")
    spec["candidate"] = {"deployment": "chat-v2"}
    assert "spec.trafficRouting.gatewayAPI.candidateBackend: required" in problems(spec)


@pytest.mark.parametrize("incumbent", ["chat", "9-lives.v1", "a" * 253, "x." * 100 + "y"])
def test_generated_names_are_service_names_of_bounded_length(incumbent: str) -> None:
    name = generated_name(incumbent, CandidatePatch(image="vllm:2"))
    assert len(name) <= GENERATED_NAME_LENGTH
    assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name), name


def test_generated_names_differ_by_patch_and_by_incumbent() -> None:
    image = CandidatePatch(image="vllm:2")
    names = {
        generated_name("chat", image),
        generated_name("chat", CandidatePatch(image="vllm:3")),
        generated_name("chat", CandidatePatch(env=[{"name": "A", "value": "1"}])),
        generated_name("chat-v2", image),
    }
    assert len(names) == 4
