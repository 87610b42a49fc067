"""Reading a streamed chat completion (`"stream": true`) as OpenAI-compatible servers send it.

Reading a streamed chat completion (`"stream": true`), as OpenAI-compatible servers send it:
server-sent events whose data are JSON chunks carrying the answer in pieces, in
`choices[].delta.content`, then `data: [DONE]`. Pure: bytes in, the answer or a StreamError out; the
client feeds it and times it.

Strict where the refusal proxy's StreamedAnswer is lenient: the proxy passes any stream on and
classifies what it can, but a replayed request whose stream is broken has no answer to score."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from modelgate.chat_answers import DONE, ServerSentEvents
from modelgate.evaluator.usage import output_tokens


class StreamError(Exception):
    """A stream without a usable answer; `transient` when another attempt may well get one."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class ChatStream:
    """One streamed chat completion, fed its bytes as they arrive. The answer is the first choice's
    (index 0) content pieces joined, and its finish reason the one a chunk carried; chunks of other
    choices and chunks without choices (a usage chunk) add nothing to it. The output tokens are the
    last `usage` a chunk reported (None if none did)."""

    def __init__(self) -> None:
        self._events = ServerSentEvents()
        self._pieces: list[str] = []
        self._finish_reason: str | None = None
        self._done = False
        self.output_tokens: int | None = None

    @property
    def has_content(self) -> bool:
        """Whether a piece of the answer has arrived (a chunk with only the role or "" is none)."""
        return bool(self._pieces)

    def feed(self, data: bytes) -> None:
        """Raises StreamError for an event that is not a chat completion chunk or reports an error."""
        for event in self._events.feed(data):
            if not self._done:  # what a server sends after [DONE] is no part of the answer
                self._add(event)

    def answer(self) -> tuple[str, str | None]:
        """The text and the finish reason, once the stream has ended; StreamError if it ended
        before `data: [DONE]`."""
        if not self._done:
            raise StreamError("the stream ended without data: [DONE]")
        return "".join(self._pieces), self._finish_reason

    def _add(self, event: str) -> None:
        if event == DONE:
            self._done = True
            return
        chunk = _chunk(event)
        if chunk.get("usage"):  # other chunks may carry "usage": null
            self.output_tokens = output_tokens(chunk)
        choice = _first_choice(chunk)
        if choice is None:
            return
        delta = choice.get("delta")
        content = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(content, str) and content:
            self._pieces.append(content)
        reason = choice.get("finish_reason")
        if isinstance(reason, str):
            self._finish_reason = reason


def _chunk(event: str) -> dict[str, Any]:
    try:
        chunk = json.loads(event)
    except ValueError as error:
        raise StreamError(f"a stream event is not JSON: {error}: {event[:80]!r}") from None
    if not isinstance(chunk, dict):
        raise StreamError(f"a stream event is not a JSON object: {event[:80]!r}")
    if chunk.get("error") is not None:
        raise _reported(chunk["error"])
    return chunk


def _first_choice(chunk: Mapping[str, Any]) -> Mapping[str, Any] | None:
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        raise StreamError("a stream chunk is not a chat completion chunk: it has no choices")
    first = [c for c in choices if isinstance(c, dict) and c.get("index", 0) == 0]
    return first[0] if first else None


def _reported(error: Any) -> StreamError:
    """An error event (vLLM sends one when a request fails after its 200 began): worth another
    attempt when its code is one a status would be retried for, 429 or 5xx."""
    details = error if isinstance(error, dict) else {}
    message = details.get("message") or str(error)
    code = details.get("code")
    transient = isinstance(code, int) and (code == 429 or code >= 500)
    where = f" ({code})" if code is not None else ""
    return StreamError(f"the stream reported an error{where}: {message}", transient=transient)
