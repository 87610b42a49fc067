"""parse_duration against the table the API server's CEL rule is checked against
(tests/cluster/test_readable_refusals.py), and the CRD's rule built from the same pattern."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml

from modelgate.api import parse_duration
from modelgate.api.duration import DURATION_PATTERN
from tests.support.durations import MALFORMED, WELL_FORMED
from tooling.crd_gen import CRD_FILE


@pytest.mark.parametrize("text", WELL_FORMED, ids=repr)
def test_a_well_formed_duration_parses(text: str) -> None:
    assert parse_duration(text) >= timedelta()


@pytest.mark.parametrize("text", MALFORMED, ids=repr)
def test_a_malformed_duration_is_refused_in_a_sentence_with_examples(text: str) -> None:
    with pytest.raises(ValueError, match="is not a duration") as refused:
        parse_duration(text)
    assert all(example in str(refused.value) for example in ("30s", "5m", "1h30m"))
    assert DURATION_PATTERN not in str(refused.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1h2m3s4ms", timedelta(hours=1, minutes=2, seconds=3, milliseconds=4)),
        ("1.5h", timedelta(minutes=90)),
        ("0.5s", timedelta(milliseconds=500)),
        ("007s", timedelta(seconds=7)),
    ],
)
def test_each_part_adds_up(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


def duration_rules(node: Any) -> list[str]:
    """The CEL rules of the CRD that match a value against the duration pattern."""
    if isinstance(node, dict):
        own = [rule["rule"] for rule in node.get("x-kubernetes-validations", [])]
        found = [rule for rule in own if rule == f"self.matches('{DURATION_PATTERN}')"]
        return found + [rule for child in node.values() for rule in duration_rules(child)]
    if isinstance(node, list):
        return [rule for child in node for rule in duration_rules(child)]
    return []


def test_the_crd_checks_durations_with_the_same_pattern_and_no_schema_pattern() -> None:
    crd = yaml.safe_load(CRD_FILE.read_text())
    assert len(duration_rules(crd)) >= 10
    assert DURATION_PATTERN not in _patterns(crd)


def _patterns(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["pattern"]] if isinstance(node.get("pattern"), str) else []
        return own + [p for child in node.values() for p in _patterns(child)]
    if isinstance(node, list):
        return [p for child in node for p in _patterns(child)]
    return []
