"""The refusal proxy's classifier, without I/O: answers read from JSON and from server-sent events,
refusal patterns and the content_filter finish reason."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from modelgate.chat_answers import (
    MAX_CHOICES,
    Answer,
    Choice,
    ServerSentEvents,
    StreamedAnswer,
    TextLimits,
    TextWindow,
    answer_from_json,
    windowed,
)
from modelgate.refusal_classifier import (
    DEFAULT_PATTERNS,
    PatternError,
    RefusalPatterns,
    RefusalReason,
    classify,
    parse_patterns,
)
from modelgate.sidecar.answer_reader import AnswerReader, ByteBudget

DEFAULTS = RefusalPatterns.of(DEFAULT_PATTERNS)


def answer(text: str, finish_reason: str | None = "stop") -> Answer:
    return Answer("m", (Choice(text, finish_reason),))


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, but I can't help with that.",
        "I\u2019m sorry, but that is not something I can do.",
        "i CANNOT ASSIST with this request.",
        "Unfortunately I can\u2019t help with creating malware.",
        "I am unable to comply with this request.",
    ],
)
def test_default_patterns_recognise_common_refusals(text: str) -> None:
    assert classify(answer(text), DEFAULTS) is RefusalReason.PATTERN


@pytest.mark.parametrize(
    "text",
    [
        "Paris is the capital of France.",
        "Sorry for the delay: here is the summary.",
        "You can help with that.",
    ],
)
def test_ordinary_answers_are_not_refusals(text: str) -> None:
    assert classify(answer(text), DEFAULTS) is None


def test_content_filter_is_a_refusal_whatever_the_text_and_wins_over_patterns() -> None:
    assert classify(answer("Here is how", "content_filter"), DEFAULTS) is RefusalReason.CONTENT_FILTER
    assert classify(answer("I'm sorry, but", "content_filter"), DEFAULTS) is RefusalReason.CONTENT_FILTER


def test_one_refused_choice_of_several_makes_the_answer_a_refusal() -> None:
    choices = (Choice("Paris.", "stop"), Choice("I cannot help with that.", "stop"))
    assert classify(Answer("m", choices), DEFAULTS) is RefusalReason.PATTERN


def test_patterns_file_skips_comments_and_blank_lines_and_replaces_the_defaults() -> None:
    patterns = parse_patterns("# house style\n\n  ^Nope\\b  \n", "patterns.txt")
    assert classify(answer("nope, not today"), patterns) is RefusalReason.PATTERN
    assert classify(answer("I'm sorry, but no."), patterns) is None


def test_patterns_file_errors_name_the_file_and_line() -> None:
    with pytest.raises(PatternError, match=r"patterns\.txt, line 3: '\(unclosed'"):
        parse_patterns("fine\n# comment\n(unclosed\n", "patterns.txt")
    with pytest.raises(PatternError, match=r"patterns\.txt: no patterns"):
        parse_patterns("# only a comment\n", "patterns.txt")


def chat_json(content: Any, finish_reason: Any = "stop", model: Any = "chat-v1") -> bytes:
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": finish_reason,
    }
    return json.dumps({"object": "chat.completion", "model": model, "choices": [choice]}).encode()


def test_json_answers_of_both_endpoints() -> None:
    assert answer_from_json(chat_json("Hi")) == Answer("chat-v1", (Choice("Hi", "stop"),))
    completion = {"model": "m", "choices": [{"index": 0, "text": "Hi", "finish_reason": "length"}]}
    assert answer_from_json(json.dumps(completion).encode()) == Answer("m", (Choice("Hi", "length"),))


def test_json_that_is_no_answer_reads_as_none_and_odd_fields_as_empty() -> None:
    assert answer_from_json(b"not json") is None
    assert answer_from_json(b'{"object": "error", "message": "boom"}') is None
    # A tool call has no content; a model name that is not a string is no model name.
    assert answer_from_json(chat_json(None, finish_reason=None, model=7)) == Answer(None, (Choice("", None),))


def sse(*events: dict[str, Any] | str) -> bytes:
    return b"".join(
        f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n".encode() for event in events
    )


def chunk(index: int, content: str | None = None, finish_reason: str | None = None) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    return {"model": "chat-v1", "choices": [{"index": index, "delta": delta, "finish_reason": finish_reason}]}


def test_streamed_chat_answer_accumulates_each_choice() -> None:
    stream = StreamedAnswer()
    stream.feed(sse(chunk(0, "I'm"), chunk(1, "Par"), chunk(0, " sorry, but"), chunk(1, "is")))
    stream.feed(sse(chunk(0, finish_reason="stop"), chunk(1, finish_reason="content_filter"), "[DONE]"))
    assert stream.answer() == Answer(
        "chat-v1", (Choice("I'm sorry, but", "stop"), Choice("Paris", "content_filter"))
    )


def test_streamed_completions_answer_reads_text() -> None:
    stream = StreamedAnswer()
    stream.feed(
        sse({"model": "m", "choices": [{"index": 0, "text": "I cannot help", "finish_reason": None}]})
    )
    assert classify(stream.answer(), DEFAULTS) is RefusalReason.PATTERN


def test_event_stream_parsing_follows_the_standard() -> None:
    events = ServerSentEvents()
    raw = (
        b": keep-alive comment\r\nevent: message\r\ndata: first\r\ndata:second\r\n\r\nid: 7\rdata: third\r\r"
    )
    # A CR at the end may be the first half of a CRLF: the line it ends waits for the next byte.
    assert events.feed(raw) == ["first\nsecond"]
    assert events.feed(b"\n") == ["third"]
    # An event without its blank line is not complete yet.
    assert events.feed(b"data: pending\n") == []
    assert events.feed(b"\n") == ["pending"]


STREAM = sse(
    chunk(0, "I\u2019m sorry,"), chunk(0, " but no"), chunk(0, finish_reason="stop"), "[DONE]"
).replace(b"\n\n", b"\r\n\r\n")


@given(cuts=st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_a_stream_reads_the_same_however_it_is_split(cuts: list[int]) -> None:
    # Chunk boundaries fall anywhere: inside a CRLF, a JSON string or a multi-byte character.
    bounds = [0, *sorted(cuts), len(STREAM)]
    stream = StreamedAnswer()
    for start, end in itertools.pairwise(bounds):
        stream.feed(STREAM[start:end])
    assert stream.answer() == Answer("chat-v1", (Choice("I\u2019m sorry, but no", "stop"),))


def test_reader_passes_on_a_json_answer_over_its_limit_unread_and_keeps_only_a_streams_text() -> None:
    body = chat_json("I cannot help with that.")
    within = AnswerReader(streamed=False, limit=len(body))
    within.feed(body[:10])
    within.feed(body[10:])
    assert within.answer() == answer_from_json(body)
    over = AnswerReader(streamed=False, limit=len(body) - 1)
    over.feed(body)
    assert over.over_limit
    assert over.answer() is None
    stream = AnswerReader(streamed=True, limit=1)
    stream.feed(STREAM)
    assert classify(stream.answer(), DEFAULTS) is RefusalReason.PATTERN


LIMITS = TextLimits(head=16, tail=8)


@given(text=st.text(max_size=24), cuts=st.lists(st.integers(min_value=0, max_value=24), max_size=6))
@example(text="0" * 21, cuts=[])  # past the head, within the tail
def test_a_text_within_the_limits_is_kept_whole_however_it_arrives(text: str, cuts: list[int]) -> None:
    window = TextWindow(LIMITS)
    bounds = [0, *sorted(cut for cut in cuts if cut <= len(text)), len(text)]
    for start, end in itertools.pairwise(bounds):
        window.feed(text[start:end])
    assert window.choice("stop") == Choice(text, "stop")


def test_a_longer_text_keeps_its_beginning_and_end_and_each_is_classified() -> None:
    middle = "filler " * 10_000
    window = TextWindow(LIMITS)
    for piece in ("I'm sorry, but ", middle, "the end."):
        window.feed(piece)
    assert window.choice("stop") == Choice("I'm sorry, but f", "stop", tail="the end.")
    long_text = "Here is the answer. " + middle + "I cannot help with that."
    limits = TextLimits(head=64, tail=32)
    assert classify(Answer("m", (windowed(long_text, limits, "stop"),)), DEFAULTS) is RefusalReason.PATTERN
    # The part between is not read, and no match spans the cut.
    hidden = "Here is the answer. " + "I cannot " + middle + "help"
    assert classify(Answer("m", (windowed(hidden, limits, "stop"),)), DEFAULTS) is None


def test_a_json_answer_is_classified_within_the_same_limits_as_a_stream() -> None:
    body = chat_json("x" * 100 + "I'm sorry, but no")
    assert answer_from_json(body, LIMITS) == Answer("chat-v1", (Choice("x" * 16, "stop", ", but no"),))


def test_an_oversized_event_is_skipped_and_the_next_one_read() -> None:
    events = ServerSentEvents(max_event_bytes=32)
    assert events.feed(b"data: " + b"a" * 20) == []
    assert events.feed(b"b" * 20) == []  # the line is too long before it ends: dropped unfinished
    assert events.feed(b"c" * 1000 + b"\ndata: more\n\ndata: next\n\n") == ["next"]
    assert events.feed(b"data: " + b"x" * 20 + b"\ndata: " + b"y" * 20 + b"\n\n") == []  # too long in lines
    assert events.feed(b"data: ok\n\n") == ["ok"]


def test_choices_past_the_bound_are_not_read() -> None:
    stream = StreamedAnswer()
    stream.feed(sse(chunk(MAX_CHOICES, "I cannot help"), chunk(-1, "I cannot help"), chunk(0, "Hi")))
    assert stream.answer() == Answer("chat-v1", (Choice("Hi", None),))


def test_json_answers_being_read_share_one_budget() -> None:
    body = chat_json("I cannot help with that.")
    budget = ByteBudget(len(body) + 10)
    first, second = (AnswerReader(False, len(body), budget=budget) for _ in range(2))
    first.feed(body)
    second.feed(body)  # does not fit beside the first: passed on unread
    assert second.over_limit and second.answer() is None
    assert classify(first.answer() or answer(""), DEFAULTS) is RefusalReason.PATTERN
    first.release()
    third = AnswerReader(False, len(body), budget=budget)
    third.feed(body)
    assert third.answer() == answer_from_json(body)
    third.release()
    assert budget.free == len(body) + 10
