"""`modelgate eval` reading streamed answers: the parser on canned byte streams, and the client on
canned servers and on the model-server double (which streams as vLLM does)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from modelgate.api.addresses import EgressPolicy
from modelgate.evaluator.model_client import ChatClient, Endpoint, RequestPolicy
from modelgate.evaluator.scoring import Reply
from modelgate.evaluator.streaming import ChatStream, StreamError
from testbed.model_server_double import Behaviour, start_model_server, stream_chunks

QUESTION = ({"role": "user", "content": "Hello"},)
# One retry, at once: enough to tell the failures worth another attempt from the others.
ONE_RETRY = RequestPolicy(retries=1, backoff_seconds=0.0)


def event(data: Mapping[str, Any] | str) -> bytes:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def chunk(content: str | None = None, finish_reason: str | None = None, index: int = 0) -> bytes:
    delta = {} if content is None else {"content": content}
    return event({"choices": [{"index": index, "delta": delta, "finish_reason": finish_reason}]})


DONE = b"data: [DONE]\n\n"
ROLE = event(
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}
)
# As vLLM streams an answer: the role with empty content, the pieces, the finish reason in a chunk
# of its own, a usage chunk without choices, then [DONE].
VLLM_STREAM = b"".join(
    (
        ROLE,
        chunk("The"),
        chunk(" answer"),
        chunk(" is 42."),
        chunk(finish_reason="stop"),
        event({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}),
        DONE,
    )
)


def read(*pieces: bytes) -> tuple[str, str | None]:
    stream = ChatStream()
    for piece in pieces:
        stream.feed(piece)
    return stream.answer()


def test_the_pieces_of_the_first_choice_are_joined_with_the_finish_reason_a_chunk_carried() -> None:
    assert read(VLLM_STREAM) == ("The answer is 42.", "stop")


def test_bytes_split_anywhere_read_the_same() -> None:
    one_by_one = [VLLM_STREAM[i : i + 1] for i in range(len(VLLM_STREAM))]
    with_crlf = VLLM_STREAM.replace(b"\n", b"\r\n")

    assert read(*one_by_one) == read(with_crlf) == ("The answer is 42.", "stop")


def test_content_has_arrived_with_the_first_piece_not_with_the_role() -> None:
    stream = ChatStream()
    stream.feed(ROLE)
    assert not stream.has_content
    stream.feed(chunk("The"))
    assert stream.has_content


def test_other_choices_comments_and_events_after_done_are_no_part_of_the_answer() -> None:
    text = read(
        b": a keep-alive comment\n\n",
        chunk("mine"),
        chunk("theirs", index=1),
        chunk(finish_reason="length"),
        DONE,
        b"data: not even JSON\n\n",
    )
    assert text == ("mine", "length")


def test_the_model_server_doubles_stream_reads_as_its_whole_answer() -> None:
    content = "a canned answer in words"
    completion = {
        "id": "chatcmpl-1",
        "created": 0,
        "model": "chat-v1",
        "choices": [{"index": 0, "message": {"content": content}, "finish_reason": "stop"}],
    }
    chunks = b"".join(event(c) for c in stream_chunks(completion))

    assert read(chunks, DONE) == (content, "stop")


def streamed_tokens(*pieces: bytes) -> int | None:
    stream = ChatStream()
    for piece in pieces:
        stream.feed(piece)
    return stream.output_tokens


def usage(completion_tokens: object) -> bytes:
    return event({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": completion_tokens}})


def with_usage_null(piece: str) -> bytes:
    return event({"choices": [{"index": 0, "delta": {"content": piece}}], "usage": None})


@pytest.mark.parametrize(
    ("pieces", "tokens"),
    [
        ((VLLM_STREAM,), 4),
        # No usage chunk (a server that ignores stream_options): unknown, and chunks are not counted.
        ((ROLE, chunk("The"), chunk(" answer"), chunk(finish_reason="stop"), DONE), None),
        # Chunks carrying "usage": null say nothing; the usage chunk decides.
        ((with_usage_null("The"), with_usage_null(" end"), usage(2), DONE), 2),
        # Continuous usage stats: every chunk reports the count so far, the last is the answer's.
        ((usage(1), usage(2), usage(3), DONE), 3),
        # What is not a count is no count.
        ((chunk("x"), usage(-1), DONE), None),
        ((chunk("x"), usage("7"), DONE), None),
        ((chunk("x"), usage(True), DONE), None),
        ((chunk("x"), usage(2.5), DONE), None),
        ((chunk("x"), usage(2**40), DONE), None),
    ],
)
def test_the_output_tokens_are_the_usage_a_chunk_reported_or_unknown(
    pieces: tuple[bytes, ...], tokens: int | None
) -> None:
    assert streamed_tokens(*pieces) == tokens


def test_a_double_with_a_wordier_tokenizer_reports_more_tokens_for_the_same_answer() -> None:
    async def both() -> tuple[Reply, Reply]:
        servers = [await start_model_server(Behaviour(tokens_per_word=n), model_name="chat") for n in (1, 2)]
        try:
            endpoints = [Endpoint("candidate", f"{server.url}/v1", "chat") for server in servers]
            return await complete(endpoints[0], stream=True), await complete(endpoints[1], stream=True)
        finally:
            for server in servers:
                await server.close()

    one, two = asyncio.run(asyncio.wait_for(both(), timeout=30))

    assert one.text == two.text and one.output_tokens is not None
    assert two.output_tokens == 2 * one.output_tokens


@pytest.mark.parametrize(
    ("pieces", "message", "transient"),
    [
        ((chunk("The"), chunk(" answer")), "the stream ended without data: [DONE]", False),
        ((b"", DONE[:-1]), "the stream ended without data: [DONE]", False),  # the event never ended
        ((chunk("The"), b"data: {not json\n\n", DONE), "a stream event is not JSON", False),
        ((event("[1, 2]"), DONE), "a stream event is not a JSON object", False),
        ((event({"id": "x"}), DONE), "not a chat completion chunk", False),
        (
            (chunk("The"), event({"error": {"message": "engine died", "code": 503}}), DONE),
            "the stream reported an error (503): engine died",
            True,
        ),
        (
            (event({"error": {"message": "too long", "type": "BadRequestError", "code": 400}}), DONE),
            "the stream reported an error (400): too long",
            False,
        ),
        ((event({"error": "overloaded"}), DONE), "the stream reported an error: overloaded", False),
    ],
)
def test_a_broken_stream_is_an_error_that_says_what_broke(
    pieces: tuple[bytes, ...], message: str, transient: bool
) -> None:
    with pytest.raises(StreamError) as raised:
        read(*pieces)
    assert message in str(raised.value)
    assert raised.value.transient is transient


@dataclass(frozen=True)
class Canned:
    """One attempt's answer: a body in a content type, or the connection closed after the body."""

    body: bytes
    content_type: str = "text/event-stream"
    status: int = 200
    break_off: bool = False


WHOLE_ANSWER = Canned(
    json.dumps({"choices": [{"index": 0, "message": {"content": "42"}, "finish_reason": "stop"}]}).encode(),
    "application/json",
)


@asynccontextmanager
async def canned_server(answers: Sequence[Canned]) -> AsyncIterator[tuple[Endpoint, list[dict[str, Any]]]]:
    """Answers the n-th chat request with the n-th canned answer (the last one again after that);
    the endpoint and the bodies it was sent."""
    asked: list[dict[str, Any]] = []

    async def complete(request: web.Request) -> web.StreamResponse:
        asked.append(await request.json())
        canned = answers[min(len(asked), len(answers)) - 1]
        response = web.StreamResponse(status=canned.status, headers={"Content-Type": canned.content_type})
        await response.prepare(request)
        await response.write(canned.body)
        if canned.break_off:
            assert request.transport is not None
            request.transport.close()
        else:
            await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", complete)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield Endpoint("candidate", f"http://127.0.0.1:{runner.addresses[0][1]}/v1", "chat"), asked
    finally:
        await runner.cleanup()


async def complete(endpoint: Endpoint, *, stream: bool) -> Reply:
    async with aiohttp.ClientSession() as session:
        return await ChatClient(session, ONE_RETRY, EgressPolicy(allow_loopback=True)).complete(
            endpoint, QUESTION, stream=stream
        )


def replied(answers: Sequence[Canned], *, stream: bool = True) -> tuple[Reply, list[dict[str, Any]]]:
    """The reply the client read from a canned server, and the bodies of its attempts."""

    async def asking() -> tuple[Reply, list[dict[str, Any]]]:
        async with canned_server(answers) as (endpoint, asked):
            return await complete(endpoint, stream=stream), asked

    return asyncio.run(asyncio.wait_for(asking(), timeout=30))


def test_a_streamed_request_asks_for_a_stream_and_is_timed_to_its_first_content_and_its_end() -> None:
    reply, asked = replied([Canned(VLLM_STREAM)])

    assert asked == [
        {
            "messages": list(QUESTION),
            "model": "chat",
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ]
    assert (reply.text, reply.finish_reason, reply.error) == ("The answer is 42.", "stop", None)
    assert reply.output_tokens == 4  # the usage chunk's completion_tokens
    assert reply.first_token_seconds is not None and reply.latency_seconds is not None
    assert 0 < reply.first_token_seconds <= reply.latency_seconds


def test_a_whole_request_is_sent_and_read_as_before() -> None:
    reply, asked = replied([WHOLE_ANSWER], stream=False)

    assert asked == [{"messages": list(QUESTION), "model": "chat"}]
    assert (reply.text, reply.finish_reason, reply.first_token_seconds) == ("42", "stop", None)
    assert reply.output_tokens is None  # it reported no usage: unknown, not 0


@pytest.mark.parametrize(
    ("answers", "attempts", "error"),
    [
        # Failures a server may not repeat are retried, as connection errors and 5xx statuses are.
        ([Canned(event({"error": {"message": "busy", "code": 503}}) + DONE), Canned(VLLM_STREAM)], 2, None),
        ([Canned(chunk("The"), break_off=True), Canned(VLLM_STREAM)], 2, None),
        ([Canned(b'{"error": "busy"}', "application/json", status=503)], 2, "HTTP 503"),
        # A stream that is wrong as it stands would be as wrong the next time.
        ([Canned(event({"error": {"message": "bad", "code": 400}}) + DONE)], 1, "error (400): bad"),
        ([Canned(chunk("The"))], 1, "the stream ended without data: [DONE]"),
        ([Canned(b"data: {oops\n\n" + DONE)], 1, "a stream event is not JSON"),
        ([WHOLE_ANSWER], 1, "asked to stream, the server answered application/json"),
    ],
)
def test_a_failed_stream_is_retried_only_when_another_attempt_may_succeed(
    answers: list[Canned], attempts: int, error: str | None
) -> None:
    reply, asked = replied(answers)

    assert len(asked) == attempts
    if error is None:
        assert (reply.text, reply.error) == ("The answer is 42.", None)
    else:
        assert reply.text is None and reply.error is not None and error in reply.error


def test_the_model_server_double_streams_the_answer_it_gives_whole() -> None:
    async def both() -> tuple[Reply, Reply]:
        server = await start_model_server(Behaviour(), model_name="chat-v1")
        try:
            endpoint = Endpoint("candidate", f"{server.url}/v1", "chat-v1")
            return await complete(endpoint, stream=True), await complete(endpoint, stream=False)
        finally:
            await server.close()

    streamed, whole = asyncio.run(asyncio.wait_for(both(), timeout=30))

    assert whole.text and (streamed.text, streamed.finish_reason) == (whole.text, whole.finish_reason)
    assert streamed.first_token_seconds is not None and whole.first_token_seconds is None
    assert streamed.output_tokens == whole.output_tokens == len(whole.text.split())
