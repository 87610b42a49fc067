"""Redaction of personal data and secrets from recorded text, before a record is kept anywhere
(docs/refusal-sidecar.md, "Recording"). Pure: text in, text out.

Each match is replaced by `[REDACTED:<name>]`, so that a replayed request keeps its shape and a
reader sees what was there. Patterns are a heuristic: they catch the usual shapes, not every one."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

# Order matters: a bearer token or key is replaced whole before its digits could be taken for a number.
# A token's last character is not a dot: that ends the sentence.
BUILT_IN_PATTERNS: tuple[tuple[str, str], ...] = (
    ("bearer", r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{7,}[A-Za-z0-9_~+/=-]"),
    # OpenAI/Anthropic-style (sk-..., sk-proj-...), GitHub (ghp_...), Slack (xox?-...), AWS access key IDs.
    ("key", r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}|\bgh[pousr]_[A-Za-z0-9]{30,}|\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    ("key", r"\bAKIA[0-9A-Z]{16}\b"),
    # Each pattern starts only where its first run of characters starts: tried at every character of
    # a long run, it would take time quadratic in the run's length (a hostile client's request).
    ("email", r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    # Seven or more digits, separated or not by spaces, dots, dashes, slashes or parentheses: card,
    # phone, account and ID numbers (and dates written with separators: see the docs' limits).
    ("number", r"(?<![\d+(])\+?\(?\d(?:[ ().\-/]{0,2}\d){6,}"),
)
USER_PATTERN = "pattern"


class RedactionPatternError(ValueError):
    """A user's redaction pattern that is not a valid regular expression."""


@dataclass(frozen=True)
class Redactor:
    patterns: tuple[tuple[str, re.Pattern[str]], ...]

    @classmethod
    def with_built_ins(cls, user_patterns: Iterable[str] = ()) -> Redactor:
        """The built-in patterns, then the user's (each replaced as `[REDACTED:pattern]`)."""
        built_in = tuple((name, re.compile(pattern)) for name, pattern in BUILT_IN_PATTERNS)
        return cls(built_in + tuple((USER_PATTERN, _compile(p)) for p in user_patterns))

    def text(self, text: str) -> str:
        for name, pattern in self.patterns:
            text = pattern.sub(f"[REDACTED:{name}]", text)
        return text


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise RedactionPatternError(f"{pattern!r} is not a regular expression: {error}") from None
