"""Test sets and recorded requests: what parses, and errors that name the line and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from modelgate.evaluator.jsonl import InputError
from modelgate.evaluator.replay_set import parse_replay, seeded_sample
from modelgate.evaluator.testset import parse_test_set

EXAMPLES = Path(__file__).parents[2] / "examples" / "gate"
HEADER = {"testSet": {"name": "qa", "version": "7", "date": "2026-11-28T00:00:00Z"}}
ITEM = {"id": "m1", "capability": "math", "prompt": "What is 6 x 7?", "check": {"number": 42}}


def jsonl(*lines: Any) -> str:
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)


def test_the_example_test_set_parses_with_every_kind_of_check() -> None:
    test_set = parse_test_set((EXAMPLES / "test-set.jsonl").read_text(), "test-set.jsonl")

    assert test_set.identity.name == "assistant-qa"
    assert test_set.capabilities() == ["math", "code", "extraction"]
    assert all(item.reference is not None and item.check.passes(item.reference) for item in test_set.items)


def test_an_exact_or_number_check_implies_its_reference() -> None:
    exact = {**ITEM, "id": "m2", "check": {"exact": "forty-two"}}
    items = parse_test_set(jsonl(HEADER, ITEM, exact), "s").items

    assert [item.reference for item in items] == ["42", "forty-two"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ((), "s: empty"),
        ((ITEM,), "s, line 1: testSet: the first line must be the header"),
        ((HEADER,), "s: no items after the header"),
        ((HEADER, "{not json"), "s, line 2: not JSON"),
        ((HEADER, "[1]"), "s, line 2: expected a JSON object, got list"),
        (({"testSet": {"name": "qa", "version": "7"}},), "s, line 1: testSet.date: Field required"),
        (
            ({"testSet": {**HEADER["testSet"], "date": "2026-11-28T00:00:00"}},),
            "testSet: date needs a time zone",
        ),
        ((HEADER, {**ITEM, "prompt": ""}), "s, line 2: prompt: String should have at least 1 character"),
        (
            (HEADER, {k: v for k, v in ITEM.items() if k != "capability"}),
            "s, line 2: capability: Field required",
        ),
        ((HEADER, {**ITEM, "capability": "replay-x"}), "line 2: capability: names starting with 'replay-'"),
        ((HEADER, {**ITEM, "capabilty": "math"}), "line 2: capabilty: Extra inputs are not permitted"),
        ((HEADER, {**ITEM, "check": {}}), "line 2: check: exactly one of exact, regex, jsonSchema, number"),
        ((HEADER, {**ITEM, "check": {"exact": "4", "number": 4}}), "line 2: check: exactly one of"),
        ((HEADER, {**ITEM, "check": {"regex": "("}}), "line 2: check.regex: '(' is not a regular expression"),
        ((HEADER, {**ITEM, "check": {"jsonSchema": {"type": 5}}}), "line 2: check.jsonSchema: not a valid"),
        ((HEADER, {**ITEM, "check": {"exact": "4", "tolerance": 1}}), "line 2: check: tolerance goes only"),
        (
            (HEADER, {**ITEM, "check": {"number": 4, "tolerance": -1}}),
            "line 2: check.tolerance: Input should be",
        ),
        ((HEADER, {**ITEM, "reference": "41"}), "line 2: reference: does not pass the item's own check"),
        ((HEADER, ITEM, "", ITEM), "s, line 4: id: 'm1' is already the id of line 2"),
    ],
)
def test_a_bad_test_set_names_the_line_and_the_field(lines: tuple[Any, ...], message: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_test_set(jsonl(*lines), "s")
    assert message in str(raised.value)


def test_recorded_requests_are_messages_or_a_prompt() -> None:
    requests = parse_replay(
        jsonl(
            {
                "messages": [{"role": "user", "content": "hi"}],
                "model": "m",
                "max_tokens": 5,
                "temperature": 1,
                "stream": True,
            },
            {"prompt": "hello"},
        ),
        "r",
    )

    assert [(r.line, r.messages, r.model, r.max_tokens, r.stream) for r in requests] == [
        (1, ({"role": "user", "content": "hi"},), "m", 5, True),
        (2, ({"role": "user", "content": "hello"},), None, None, False),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"model": "m"}, "r, line 1: exactly one of messages or prompt"),
        (
            {"prompt": "a", "messages": [{"role": "user", "content": "b"}]},
            "exactly one of messages or prompt",
        ),
        ({"messages": []}, "r, line 1: messages: List should have at least 1 item"),
        ({"messages": [{"content": "b"}]}, "r, line 1: messages.0.role: Field required"),
        ({"prompt": "a", "max_tokens": 0}, "r, line 1: max_tokens: Input should be greater than 0"),
        ({"prompt": "a", "stream": "true"}, "r, line 1: stream: Input should be a valid boolean"),
        ({"prompt": "a", "stream": 1}, "r, line 1: stream: Input should be a valid boolean"),
        ({"prompt": "a", "stream": None}, "r, line 1: stream: Input should be a valid boolean"),
    ],
)
def test_a_bad_recorded_request_names_the_line_and_the_field(line: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_replay(jsonl(line), "r")
    assert message in str(raised.value)


def test_a_sample_is_the_same_for_a_seed_and_kept_in_file_order() -> None:
    requests = parse_replay((EXAMPLES / "replay.jsonl").read_text(), "replay.jsonl")

    first, again, other = (seeded_sample(requests, 10, seed) for seed in (1, 1, 2))

    assert first == again
    assert first != other
    assert len(first) == 10
    assert [r.line for r in first] == sorted(r.line for r in first)
    assert seeded_sample(requests, None, 1) == requests
