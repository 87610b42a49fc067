"""What an OpenAI-compatible server answered: each choice's text and how it finished, read from a
JSON body or a stream of server-sent events. Pure: bytes in, answers out; the refusal proxy and the
evaluator both read answers with it (`refusal_classifier` judges them).

Memory is bounded whatever the server sends: a choice keeps the first and last characters of its
text (`TextLimits`), an event larger than `MAX_EVENT_BYTES` is skipped, and choices past
`MAX_CHOICES` are not read. Text within the limits is kept whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DONE = "[DONE]"
# A chunk of a stream is a few hundred bytes (a few KiB with logprobs); larger events are skipped.
MAX_EVENT_BYTES = 64 * 1024
# OpenAI's own bound on `n`; choices with a higher index are not read.
MAX_CHOICES = 128


@dataclass(frozen=True)
class Choice:
    """A choice's text and how it finished. `tail` is None when `text` is the whole text, else the
    text was too long to keep: `text` is its beginning and `tail` its end."""

    text: str
    finish_reason: str | None
    tail: str | None = None

    def fragments(self) -> tuple[str, ...]:
        """What the patterns search, each on its own: a match never spans the part not kept."""
        return (self.text,) if self.tail is None else (self.text, self.tail)


@dataclass(frozen=True)
class TextLimits:
    """How much of each choice's text is kept: its first `head` and last `tail` characters."""

    head: int = 8192
    tail: int = 2048


@dataclass
class TextWindow:
    """The first and last characters of a text fed in pieces; what lies between is dropped."""

    limits: TextLimits
    _head: list[str] = field(default_factory=list)
    _head_length: int = 0
    _tail: str = ""
    _cut: bool = False

    def feed(self, piece: str) -> None:
        room = self.limits.head - self._head_length
        if room > 0:
            self._head.append(piece[:room])
            self._head_length += min(room, len(piece))
            piece = piece[room:]
        if not piece:
            return
        tail = self._tail + piece
        self._cut = self._cut or len(tail) > self.limits.tail
        self._tail = tail[max(0, len(tail) - self.limits.tail) :]

    def choice(self, finish_reason: str | None) -> Choice:
        head = "".join(self._head)
        return (
            Choice(head, finish_reason, self._tail) if self._cut else Choice(head + self._tail, finish_reason)
        )


def windowed(text: str, limits: TextLimits, finish_reason: str | None) -> Choice:
    window = TextWindow(limits)
    window.feed(text)
    return window.choice(finish_reason)


@dataclass(frozen=True)
class Answer:
    """The model name the server reported (None if it reported none) and each choice's text."""

    model: str | None
    choices: tuple[Choice, ...]


def answer_from_json(body: bytes, limits: TextLimits = TextLimits()) -> Answer | None:
    """A non-streaming answer: `choices[].message.content` (chat) or `choices[].text` (completions),
    each kept within `limits` as a stream's would be. None when the body is not such an answer."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("choices"), list):
        return None
    choices = tuple(
        windowed(_choice_text(choice, "message"), limits, _finish_reason(choice))
        for choice in document["choices"][:MAX_CHOICES]
        if isinstance(choice, dict)
    )
    return Answer(_model(document), choices)


class StreamedAnswer:
    """A streamed answer (`stream: true`), fed the response bytes as they arrive: server-sent
    events whose data is a JSON chunk with `choices[].delta.content` (chat) or `choices[].text`
    (completions), then `[DONE]`. Each choice's text is kept within `limits`."""

    def __init__(self, limits: TextLimits = TextLimits()) -> None:
        self._events = ServerSentEvents()
        self._limits = limits
        self._texts: dict[int, TextWindow] = {}
        self._finish_reasons: dict[int, str | None] = {}
        self._model: str | None = None

    def feed(self, data: bytes) -> None:
        for event in self._events.feed(data):
            self._add(event)

    def answer(self) -> Answer:
        indexes = sorted(self._texts.keys() | self._finish_reasons.keys())
        return Answer(
            self._model,
            tuple(self._window(i).choice(self._finish_reasons.get(i)) for i in indexes),
        )

    def _window(self, index: int) -> TextWindow:
        return self._texts.setdefault(index, TextWindow(self._limits))

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
            if not 0 <= index < MAX_CHOICES:
                continue
            self._window(index).feed(_choice_text(choice, "delta"))
            if (reason := _finish_reason(choice)) is not None:
                self._finish_reasons[index] = reason


class ServerSentEvents:
    """An incremental parser of the `text/event-stream` format (the WHATWG HTML standard, section
    "Server-sent events"): feed bytes as they arrive, get the data of each complete event. Lines
    end with CRLF, LF or CR, possibly split across feeds; comments and fields other than `data`
    are skipped; an event's `data` lines are joined with a newline. An event longer than
    `max_event_bytes` is skipped whole: neither its lines nor its data are kept."""

    _LINE_END = re.compile(rb"\r\n|\n|\r")

    def __init__(self, max_event_bytes: int = MAX_EVENT_BYTES) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event_bytes = 0
        self._max_event_bytes = max_event_bytes

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
        if self._event_bytes + len(self._buffer) > self._max_event_bytes:
            self._buffer = b""  # an unfinished line already too long: the rest of it is skipped too
            self._event_bytes = self._max_event_bytes + 1
        return events

    def _line(self, raw: bytes) -> str | None:
        if not raw:
            data, self._data = self._data, []
            oversized, self._event_bytes = self._event_bytes > self._max_event_bytes, 0
            return "\n".join(data) if data and not oversized else None
        self._event_bytes += len(raw)
        if self._event_bytes > self._max_event_bytes:
            self._data.clear()
            return None
        name, _, value = raw.decode("utf-8", errors="replace").partition(":")
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
