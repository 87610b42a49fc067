"""Counts in messages take the noun's number: "1 breach", "2 breaches", never "breach(es)"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from modelgate.core.reasons import how_many

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "modelgate"


@pytest.mark.parametrize(
    ("count", "noun", "plural", "expected"),
    [
        (1, "breach", "breaches", "1 breach"),
        (2, "breach", "breaches", "2 breaches"),
        (0, "rule", None, "0 rules"),
        (1, "attempt", None, "1 attempt"),
        (1.5, "time", None, "1.5 times"),
    ],
)
def test_a_count_takes_the_number_of_its_noun(
    count: float, noun: str, plural: str | None, expected: str
) -> None:
    assert how_many(count, noun, plural) == expected


def test_no_message_hedges_a_plural_with_parentheses() -> None:
    """An f-string of the package that counts with "noun(s)" or "noun(es)" (an http(s) URL is no count)."""
    hedged = re.compile(r"\}[^\"{]*\b(?!http)\w+\((s|es)\)")
    found = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in PACKAGE.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if hedged.search(line)
    ]
    assert not found, found
