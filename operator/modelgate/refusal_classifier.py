"""Whether an answer is a refusal. Pure: an answer in, a reason (or None) out; shared by the refusal
proxy (sidecar) and the gate's evaluator, which must judge answers alike.

An answer is a refusal when a choice finished with `content_filter` (the server's own filter
stopped it) or when a choice's text matches one of the refusal patterns (case-insensitive regular
expressions, searched anywhere in the text). Patterns are a heuristic: they miss refusals worded
otherwise and may match a helpful answer that quotes one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from enum import StrEnum

from modelgate.chat_answers import Answer

CONTENT_FILTER = "content_filter"

# Straight and typographic apostrophes: models write both.
_APOSTROPHE = "['\u2019]"
DEFAULT_PATTERNS: tuple[str, ...] = (
    rf"\bI can{_APOSTROPHE}?t (help|assist) with\b",
    r"\bI cannot (help|assist|provide|comply)\b",
    rf"\bI{_APOSTROPHE}m sorry, but\b",
    r"\bI am sorry, but\b",
    rf"\bI{_APOSTROPHE}m (not able|unable) to (help|assist|comply)\b",
    r"\bI am (not able|unable) to (help|assist|comply)\b",
    r"\bI won['\u2019]t be able to (help|assist)\b",
)


class RefusalReason(StrEnum):
    CONTENT_FILTER = "content_filter"
    PATTERN = "pattern"


class PatternError(ValueError):
    """A refusal pattern that is not a valid regular expression."""


class RefusalPatterns:
    """Compiled, case-insensitive refusal patterns."""

    def __init__(self, sources: Iterable[tuple[str, str]]) -> None:
        """`sources`: (where the pattern comes from, for errors; the regular expression)."""
        self.compiled = tuple(_compile(where, pattern) for where, pattern in sources)

    @classmethod
    def of(cls, patterns: Sequence[str]) -> RefusalPatterns:
        return cls((f"pattern {n}", pattern) for n, pattern in enumerate(patterns, start=1))

    def matches(self, text: str) -> bool:
        return any(pattern.search(text) for pattern in self.compiled)


def _compile(where: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as error:
        raise PatternError(f"{where}: {pattern!r} is not a regular expression: {error}") from None


def parse_patterns(text: str, source: str) -> RefusalPatterns:
    """A patterns file: one regular expression per line; blank lines and lines starting with `#`
    are skipped. `source` names the file in errors."""
    lines = [(f"{source}, line {n}", line.strip()) for n, line in enumerate(text.splitlines(), start=1)]
    kept = [(where, line) for where, line in lines if line and not line.startswith("#")]
    if not kept:
        raise PatternError(f"{source}: no patterns (one regular expression per line expected)")
    return RefusalPatterns(kept)


def classify(answer: Answer, patterns: RefusalPatterns) -> RefusalReason | None:
    """The reason the answer is a refusal, or None. The server's own filter wins over patterns."""
    if any(choice.finish_reason == CONTENT_FILTER for choice in answer.choices):
        return RefusalReason.CONTENT_FILTER
    if any(patterns.matches(text) for choice in answer.choices for text in choice.fragments()):
        return RefusalReason.PATTERN
    return None
