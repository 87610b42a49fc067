"""What an OpenAI-compatible server answered, and whether the answer is a refusal. Pure: bytes in,
verdicts out; the proxy feeds it and does all I/O.

An answer is a refusal when a choice finished with `content_filter` (the server's own filter
stopped it) or when a choice's text matches one of the refusal patterns (case-insensitive regular
expressions, searched anywhere in the text). Patterns are a heuristic: they miss refusals worded
otherwise and may match a helpful answer that quotes one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CONTENT_FILTER = "content_filter"
DONE = "[DONE]"

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


@dataclass(frozen=True)
class Choice:
    text: str
    finish_reason: str | None


@dataclass(frozen=True)
class Answer:
    """The model name the server reported (None if it reported none) and each choice's text."""

    model: str | None
    choices: tuple[Choice, ...]


def classify(answer: Answer, patterns: RefusalPatterns) -> RefusalReason | None:
    """The reason the answer is a refusal, or None. The server's own filter wins over patterns."""
    if any(choice.finish_reason == CONTENT_FILTER for choice in answer.choices):
        return RefusalReason.CONTENT_FILTER
    if any(patterns.matches(choice.text) for choice in answer.choices):
        return RefusalReason.PATTERN
    return None


def answer_from_json(body: bytes) -> Answer | None:
    """A non-streaming answer: `choices[].message.content` (chat) or `choices[].text` (completions).
    None when the body is not such an answer."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("choices"), list):
        return None
    choices = tuple(
        Choice(_choice_text(choice, "message"), _finish_reason(choice))
        for choice in document["choices"]
        if isinstance(choice, dict)
    )
    return Answer(_model(document), choices)


class AnswerReader:
    """Reads one response body as it passes through: a stream of events keeps only the answer's
    text; a JSON answer is kept whole up to `limit` bytes, and a larger one is passed on but not
    read (`answer()` is None)."""

    def __init__(self, streamed: bool, limit: int) -> None:
        self._streamed = StreamedAnswer() if streamed else None
        self._body: list[bytes] = []
        self._size = 0
        self._limit = limit

    @property
    def over_limit(self) -> bool:
        return self._size > self._limit

    def feed(self, chunk: bytes) -> None:
        if self._streamed is not None:
            self._streamed.feed(chunk)
            return
        if self.over_limit:
            return
        self._size += len(chunk)
        if self.over_limit:
            self._body.clear()
        else:
            self._body.append(chunk)

    def answer(self) -> Answer | None:
        if self._streamed is not None:
            return self._streamed.answer()
        return None if self.over_limit else answer_from_json(b"".join(self._body))


class StreamedAnswer:
    """A streamed answer (`stream: true`), fed the response bytes as they arrive: server-sent
    events whose data is a JSON chunk with `choices[].delta.content` (chat) or `choices[].text`
    (completions), then `[DONE]`. Text is accumulated per choice index."""

    def __init__(self) -> None:
        self._events = ServerSentEvents()
        self._texts: dict[int, list[str]] = {}
        self._finish_reasons: dict[int, str | None] = {}
        self._model: str | None = None

    def feed(self, data: bytes) -> None:
        for event in self._events.feed(data):
            self._add(event)

    def answer(self) -> Answer:
        indexes = sorted(self._texts.keys() | self._finish_reasons.keys())
        return Answer(
            self._model,
            tuple(Choice("".join(self._texts.get(i, [])), self._finish_reasons.get(i)) for i in indexes),
        )

    def _add(self, data: str) -> None:
        if data == DONE:
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            return
        if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
            return
        self._model = self._model or _model(chunk)
        for choice in chunk["choices"]:
            if not isinstance(choice, dict):
                continue
            index = choice.get("index", 0)
            index = index if isinstance(index, int) else 0
            self._texts.setdefault(index, []).append(_choice_text(choice, "delta"))
            if (reason := _finish_reason(choice)) is not None:
                self._finish_reasons[index] = reason


class ServerSentEvents:
    """An incremental parser of the `text/event-stream` format (the WHATWG HTML standard, section
    "Server-sent events"): feed bytes as they arrive, get the data of each complete event. Lines
    end with CRLF, LF or CR, possibly split across feeds; comments and fields other than `data`
    are skipped; an event's `data` lines are joined with a newline."""

    _LINE_END = re.compile(rb"\r\n|\n|\r")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += chunk
        events = []
        start = 0
        for match in self._LINE_END.finditer(self._buffer):
            if match.group() == b"\r" and match.end() == len(self._buffer):
                break  # perhaps the first half of a CRLF split across feeds
            event = self._line(self._buffer[start : match.start()])
            if event is not None:
                events.append(event)
            start = match.end()
        self._buffer = self._buffer[start:]
        return events

    def _line(self, raw: bytes) -> str | None:
        line = raw.decode("utf-8", errors="replace")
        if not line:
            data, self._data = self._data, []
            return "\n".join(data) if data else None
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value.removeprefix(" "))
        return None


def _model(document: Mapping[str, Any]) -> str | None:
    model = document.get("model")
    return model if isinstance(model, str) and model else None


def _choice_text(choice: Mapping[str, Any], message_key: str) -> str:
    message = choice.get(message_key)
    content = message.get("content") if isinstance(message, dict) else choice.get("text")
    return content if isinstance(content, str) else ""


def _finish_reason(choice: Mapping[str, Any]) -> str | None:
    reason = choice.get("finish_reason")
    return reason if isinstance(reason, str) else None
