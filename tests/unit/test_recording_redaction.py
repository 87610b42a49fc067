"""What the refusal proxy records: planted emails, keys, tokens and numbers are redacted from the
request and the answer and nothing else changes; a record reads back through the gate's replay
format as the request that was sent; a user's pattern that backtracks costs its own record only."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from modelgate.chat_answers import Answer, Choice, StreamedAnswer
from modelgate.evaluator.replay_set import parse_replay
from modelgate.recordings import RECORDED_AT, parse_time
from modelgate.sidecar.record import record_line
from modelgate.sidecar.recording import (
    DirectorySink,
    Outcome,
    Recorder,
    RecordingMetrics,
    RecordingSettings,
    RequestTee,
)
from modelgate.sidecar.redaction import RedactionPatternError, Redactor

RECORDED = datetime(2026, 12, 5, 6, 0, 1, 250000, tzinfo=UTC)
# Each planted value, and the kind of placeholder it must become.
PLANTED = {
    "jane.doe+work@example.co.uk": "email",
    "sk-proj-Ab12Cd34Ef56Gh78Ij90KlMn": "key",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345": "key",
    "AKIAIOSFODNN7EXAMPLE": "key",
    "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig": "bearer",
    "4111 1111 1111 1111": "number",
    "+1 (555) 123-4567": "number",
    "0049301234567": "number",
}
# Text around the planted values that must survive as it is: short numbers, prices, versions, words.
TEMPLATE = (
    "Hi, I am Jane, 42 years old, order 1234 cost $19.99 on v2.3.1. Mail {} please; "
    "my key is {} and {}, the AWS one {}. Header: {}. Card {}, call {} or {}. Thanks!"
)


def planted_text() -> tuple[str, str]:
    """The text with the planted values, and what it must read as once redacted."""
    return (
        TEMPLATE.format(*PLANTED),
        TEMPLATE.format(*(f"[REDACTED:{kind}]" for kind in PLANTED.values())),
    )


def test_planted_personal_data_and_secrets_are_redacted_and_nothing_else_changes() -> None:
    text, expected = planted_text()
    assert Redactor.with_built_ins().text(text) == expected


def test_user_patterns_are_redacted_after_the_built_ins() -> None:
    redactor = Redactor.with_built_ins([r"\bCUST-[A-Z]{4}\b", r"(?i)project falcon"])
    assert (
        redactor.text("CUST-ABCD asked about Project Falcon")
        == "[REDACTED:pattern] asked about [REDACTED:pattern]"
    )
    with pytest.raises(RedactionPatternError, match=r"'\(unclosed'"):
        Redactor.with_built_ins(["(unclosed"])


def test_a_record_is_redacted_in_every_message_and_the_answer_and_keeps_only_what_a_replay_sends() -> None:
    text, expected = planted_text()
    request = {
        "model": "chat-v1",
        "user": "jane@example.com",  # not a replay field: not recorded at all
        "temperature": 0.3,
        "max_tokens": 64,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {}}],
            },
        ],
    }
    answer = Answer("chat-v1", (Choice(f"Noted: {text}", "stop"),))
    line = record_line(json.dumps(request).encode(), answer, RECORDED, Redactor.with_built_ins())
    assert line is not None and line.endswith(b"\n")
    record = json.loads(line)
    assert record == {
        "model": "chat-v1",
        "max_tokens": 64,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": expected}]},
        ],
        "answer": f"Noted: {expected}",
        RECORDED_AT: record[RECORDED_AT],
    }
    assert parse_time(record[RECORDED_AT]) == RECORDED
    assert not any(value in line.decode() for value in PLANTED)


def test_a_streamed_answer_is_recorded_as_its_assembled_text() -> None:
    streamed = StreamedAnswer()
    for piece in ("Write to ", "jane@", "example.com", " today"):
        chunk = {"choices": [{"index": 0, "delta": {"content": piece}}]}
        streamed.feed(f"data: {json.dumps(chunk)}\n\n".encode())
    streamed.feed(b"data: [DONE]\n\n")
    body = json.dumps({"messages": [{"role": "user", "content": "Who?"}], "stream": True}).encode()
    line = record_line(body, streamed.answer(), RECORDED, Redactor.with_built_ins())
    assert line is not None
    assert json.loads(line)["answer"] == "Write to [REDACTED:email] today"


def test_records_read_back_through_the_replay_format_as_the_requests_sent() -> None:
    sent = [
        {"model": "chat-v1", "messages": [{"role": "user", "content": "What is 2+2?"}], "max_tokens": 8},
        {"messages": [{"role": "user", "content": "Stream me a haiku"}], "stream": True},
        {"model": "text-v1", "prompt": "Once upon a time"},
    ]
    lines = [record_line(json.dumps(r).encode(), None, RECORDED, Redactor.with_built_ins()) for r in sent]
    replayed = parse_replay(b"".join(line for line in lines if line is not None).decode(), "recorded.jsonl")
    assert [(r.messages, r.model, r.max_tokens, r.stream) for r in replayed] == [
        (({"role": "user", "content": "What is 2+2?"},), "chat-v1", 8, False),
        (({"role": "user", "content": "Stream me a haiku"},), None, None, True),
        (({"role": "user", "content": "Once upon a time"},), "text-v1", None, False),
    ]


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b'{"messages": []}',
        b'{"messages": [{"content": "no role"}]}',
        b'{"prompt": [1, 2]}',
    ],
)
def test_a_body_the_replay_cannot_send_again_is_not_recorded(body: bytes) -> None:
    assert record_line(body, None, RECORDED, Redactor.with_built_ins()) is None


def offered(recorder: Recorder, content: str) -> None:
    tee = recorder.sampled()
    assert isinstance(tee, RequestTee)
    tee.feed(json.dumps({"messages": [{"role": "user", "content": content}]}).encode())
    recorder.offer(tee, Answer("chat-v1", (Choice("ok", "stop"),)))


def test_a_backtracking_pattern_costs_its_record_and_recording_goes_on(tmp_path: Path) -> None:
    """`(a+)+$` on 40 a's and a '!' searches for ever: its record is counted redaction_failed within
    the time limit, its process replaced, and the 40 records after it are written."""
    registry = CollectorRegistry()
    metrics = RecordingMetrics(registry)
    recording = RecordingSettings(
        DirectorySink(tmp_path),
        str(tmp_path),
        rate=1.0,
        max_bytes=10**6,
        redactor=Redactor.with_built_ins([r"(a+)+$"]),
        redaction_seconds=0.5,
    )

    def outcome(kind: Outcome) -> float | None:
        return registry.get_sample_value("llm_recording_records_total", {"outcome": kind.value})

    async def scenario() -> None:
        recorder = Recorder(recording, metrics)
        await recorder.start()
        offered(recorder, "a" * 40 + "!")
        for number in range(40):
            offered(recorder, f"request {number}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10
        while not outcome(Outcome.REDACTION_FAILED):
            assert loop.time() < deadline, "the record is still being redacted"
            await asyncio.sleep(0.05)
        await recorder.close()  # waits for the others' redaction, writes the last batch

    asyncio.run(scenario())
    assert outcome(Outcome.REDACTION_FAILED) == 1
    assert outcome(Outcome.WRITTEN) == 40
    written = [
        json.loads(line) for path in tmp_path.glob("*.jsonl") for line in path.read_text().splitlines()
    ]
    assert sorted(r["messages"][0]["content"] for r in written) == sorted(f"request {n}" for n in range(40))
