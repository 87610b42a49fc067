"""The refusal proxy's reading of a response body as it passes through, in bounded memory."""

from __future__ import annotations

from modelgate.chat_answers import Answer, StreamedAnswer, TextLimits, answer_from_json

DEFAULT_LIMITS = TextLimits()


class ByteBudget:
    """The bytes that JSON answers being read may hold at once, shared by all connections: an
    answer that does not fit is passed on unread, so memory stays bounded however many arrive."""

    def __init__(self, total: int) -> None:
        self.free = total

    def take(self, size: int) -> bool:
        if size > self.free:
            return False
        self.free -= size
        return True

    def give(self, size: int) -> None:
        self.free += size


class AnswerReader:
    """Reads one response body as it passes through: a stream of events keeps each choice's text
    within `limits`; a JSON answer is kept whole up to `limit` bytes (and while `budget` has room),
    and a larger one is passed on but not read (`answer()` is None). `release()` gives the bytes
    held back to the budget."""

    def __init__(
        self,
        streamed: bool,
        limit: int,
        limits: TextLimits = DEFAULT_LIMITS,
        budget: ByteBudget | None = None,
    ) -> None:
        self._streamed = StreamedAnswer(limits) if streamed else None
        self._limits = limits
        self._budget = budget or ByteBudget(limit)
        self._body: list[bytes] = []
        self._size = 0
        self._limit = limit
        self._refused = False

    @property
    def over_limit(self) -> bool:
        return self._refused

    def feed(self, chunk: bytes) -> None:
        if self._streamed is not None:
            self._streamed.feed(chunk)
            return
        if self._refused:
            return
        if self._size + len(chunk) > self._limit or not self._budget.take(len(chunk)):
            self._refused = True
            self.release()
            return
        self._size += len(chunk)
        self._body.append(chunk)

    def answer(self) -> Answer | None:
        if self._streamed is not None:
            return self._streamed.answer()
        return None if self._refused else answer_from_json(b"".join(self._body), self._limits)

    def release(self) -> None:
        self._budget.give(self._size)
        self._body.clear()
        self._size = 0
