"""The refusal proxy in this process, in front of the model server double or a small echo server:
bytes and headers pass through unchanged, streams pass through as they are produced, and the
counters say what was answered (refusals, errors, clients that left)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from multidict import CIMultiDict
from prometheus_client.parser import text_string_to_metric_families
from yarl import URL

from modelgate.refusal_classifier import DEFAULT_PATTERNS, RefusalPatterns
from modelgate.sidecar.proxy import ProxySettings, RunningProxy, start_refusal_proxy
from testbed.model_server_double import Behaviour, RunningServer, start_model_server

MODEL = "chat-v1"
CHAT = "/v1/chat/completions"
CHAT_REQUEST = {"messages": [{"role": "user", "content": "Hello"}]}
STREAM_REQUEST = {**CHAT_REQUEST, "stream": True}
Series = tuple[str, frozenset[tuple[str, str]]]
Counts = dict[Series, float]


@asynccontextmanager
async def proxied(
    upstream: str, **settings_: Any
) -> AsyncIterator[tuple[RunningProxy, aiohttp.ClientSession]]:
    """The proxy in front of `upstream`, with `settings_` over the defaults (models: MODEL)."""
    settings = ProxySettings(
        URL(upstream), RefusalPatterns.of(DEFAULT_PATTERNS), **({"models": (MODEL,)} | settings_)
    )
    proxy = await start_refusal_proxy(settings, "127.0.0.1", 0, 0)
    try:
        async with aiohttp.ClientSession(auto_decompress=False) as session:
            yield proxy, session
    finally:
        await proxy.close()


@asynccontextmanager
async def double(behaviour: Behaviour) -> AsyncIterator[RunningServer]:
    server = await start_model_server(behaviour, model_name=MODEL)
    try:
        yield server
    finally:
        await server.close()


def run(scenario: Callable[[], Awaitable[None]], timeout: float = 60) -> None:
    asyncio.run(asyncio.wait_for(scenario(), timeout=timeout))


async def counts(proxy: RunningProxy, session: aiohttp.ClientSession) -> Counts:
    async with session.get(proxy.metrics_url) as response:
        text = await response.text()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name in ("llm_requests_total", "llm_refusals_total")
    }


async def counted(proxy: RunningProxy, session: aiohttp.ClientSession, series: Series) -> None:
    """Polls the proxy's metrics until `series` is 1 (a client that left is counted a moment later)."""
    deadline = asyncio.get_running_loop().time() + 10
    while (await counts(proxy, session)).get(series) != 1:
        assert asyncio.get_running_loop().time() < deadline, f"{series} did not reach 1"
        await asyncio.sleep(0.05)


def requests(code: str, endpoint: str = CHAT, model: str = MODEL) -> Series:
    return "llm_requests_total", frozenset({"model": model, "endpoint": endpoint, "code": code}.items())


def refusals(reason: str) -> Series:
    return "llm_refusals_total", frozenset({"model": MODEL, "reason": reason}.items())


def test_counters_exist_at_zero_before_the_first_request() -> None:
    async def scenario() -> None:
        async with proxied("http://127.0.0.1:9") as (proxy, session):
            assert await counts(proxy, session) == {
                requests("200"): 0,
                requests("200", "/v1/completions"): 0,
                refusals("pattern"): 0,
                refusals("content_filter"): 0,
            }

    run(scenario)


def test_refusals_are_counted_by_reason_streamed_or_not() -> None:
    async def scenario() -> None:
        async with double(Behaviour(refusal_rate=0.5)) as server, proxied(server.url) as (proxy, session):
            for body in (CHAT_REQUEST, CHAT_REQUEST, STREAM_REQUEST, STREAM_REQUEST):
                async with session.post(f"{proxy.url}{CHAT}", json=body) as response:
                    assert response.status == 200
                    await response.read()
            server.behaviour = Behaviour(refusal_rate=1.0, refusal_style="content_filter")
            async with session.post(f"{proxy.url}{CHAT}", json=STREAM_REQUEST) as response:
                await response.read()
            found = await counts(proxy, session)
            assert found[requests("200")] == 5
            assert found[refusals("pattern")] == 2
            assert found[refusals("content_filter")] == 1

    run(scenario)


def test_a_stream_reaches_the_client_chunk_by_chunk_and_unchanged() -> None:
    async def scenario() -> None:
        behaviour = Behaviour(refusal_rate=1.0, hold_streams=True)
        async with double(behaviour) as server, proxied(server.url) as (proxy, session):
            async with session.post(f"{proxy.url}{CHAT}", json=STREAM_REQUEST) as response:
                assert response.content_type == "text/event-stream"
                # The double holds the stream after its first chunk: it arrives before the rest exists.
                first = await response.content.readuntil(b"\n\n")
                assert json.loads(first.removeprefix(b"data: "))["choices"][0]["delta"]["role"] == "assistant"
                assert await release(server, session) == 1
                through_proxy = first + await response.read()
            server.behaviour = Behaviour(refusal_rate=1.0)
            async with session.post(f"{server.url}{CHAT}", json=STREAM_REQUEST) as response:
                direct = await response.read()
            # Identical but for each answer's id and creation time.
            assert normalised(through_proxy) == normalised(direct)
            assert through_proxy.endswith(b"data: [DONE]\n\n")
            assert (await counts(proxy, session))[refusals("pattern")] == 1

    run(scenario)


async def release(server: RunningServer, session: aiohttp.ClientSession) -> int:
    async with session.post(f"{server.url}/admin/release-streams") as response:
        released: int = (await response.json())["released"]
        return released


def normalised(stream: bytes) -> list[Any]:
    events = [event.removeprefix(b"data: ") for event in stream.split(b"\n\n") if event]
    return [json.loads(e) | {"id": "", "created": 0} if e.startswith(b"{") else e.decode() for e in events]


def test_a_client_that_leaves_mid_stream_is_counted_as_499() -> None:
    async def scenario() -> None:
        async with double(Behaviour(hold_streams=True)) as server, proxied(server.url) as (proxy, session):
            async with session.post(f"{proxy.url}{CHAT}", json=STREAM_REQUEST) as response:
                await response.content.readuntil(b"\n\n")
                response.close()
            # The proxy notices when it writes the rest of the stream.
            await release(server, session)

            await counted(proxy, session, requests("499"))

    run(scenario)


def test_server_errors_pass_through_and_an_unreachable_server_is_a_counted_502() -> None:
    async def scenario() -> None:
        async with double(Behaviour(error_rate=1.0)) as server, proxied(server.url) as (proxy, session):
            async with session.post(f"{proxy.url}{CHAT}", json=CHAT_REQUEST) as response:
                assert response.status == 500
                assert (await response.json())["message"].startswith("injected failure")
            assert (await counts(proxy, session))[requests("500")] == 1
        async with proxied("http://127.0.0.1:9") as (proxy, session):
            async with session.post(f"{proxy.url}{CHAT}", json=CHAT_REQUEST) as response:
                assert response.status == 502
                assert "unreachable" in (await response.json())["message"]
            assert (await counts(proxy, session))[requests("502")] == 1

    run(scenario)


def test_other_paths_are_forwarded_but_not_counted() -> None:
    async def scenario() -> None:
        async with double(Behaviour()) as server, proxied(server.url) as (proxy, session):
            async with session.get(f"{proxy.url}/v1/models") as response:
                assert (await response.json())["data"][0]["id"] == MODEL
            async with session.get(f"{proxy.url}/metrics") as response:
                assert "vllm:num_requests_waiting" in await response.text()  # the server's own metrics
            assert sum((await counts(proxy, session)).values()) == 0

    run(scenario)


@dataclass
class EchoServer:
    url: str
    slow_started: asyncio.Event = field(default_factory=asyncio.Event)
    slow_cancelled: asyncio.Event = field(default_factory=asyncio.Event)


@asynccontextmanager
async def echo_server() -> AsyncIterator[EchoServer]:
    """Answers with the request's body and reports the headers it received (/echo), breaks off a
    stream (chat completions), and never finishes an answer (completions)."""
    server = EchoServer("")

    async def echo(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        seen = {"X-Seen": json.dumps(dict(request.headers)), "X-Seen-Path": request.rel_url.raw_path_qs}
        headers = web.Response(body=body, headers=seen)
        headers.headers.add("Set-Cookie", "a=1")
        headers.headers.add("Set-Cookie", "b=2")
        return headers

    async def broken(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b'data: {"choices": [{"index": 0, "delta": {"content": "I"}}]}\n\n')
        assert request.transport is not None
        request.transport.close()
        return response

    async def slow(_: web.Request) -> web.StreamResponse:
        server.slow_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # the proxy closed the connection
            server.slow_cancelled.set()
            raise
        raise AssertionError("unreachable")

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/echo", echo)
    app.router.add_post(CHAT, broken)
    app.router.add_post("/v1/completions", slow)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    server.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield server
    finally:
        await runner.cleanup()


def test_large_bodies_and_end_to_end_headers_pass_through_unchanged() -> None:
    async def scenario() -> None:
        body = bytes(range(256)) * (32 * 1024)  # 8 MiB, not JSON, not text
        sent = {"Authorization": "Bearer t", "X-Request-Id": "r-1", "Content-Type": "application/x-test"}
        async with echo_server() as upstream, proxied(upstream.url) as (proxy, session):
            url = URL(f"{proxy.url}/echo?a=1&b=%2F", encoded=True)  # as sent, not normalised by yarl
            response = await session.post(url, data=body, headers=sent)
            assert await response.read() == body
            assert response.headers.getall("Set-Cookie") == ["a=1", "b=2"]
            assert response.headers["X-Seen-Path"] == "/echo?a=1&b=%2F"
            seen = CIMultiDict(json.loads(response.headers["X-Seen"]))  # names are case-insensitive
        assert {name: seen.get(name) for name in sent} == sent
        assert seen["Content-Length"] == str(len(body))

    run(scenario)


def test_a_stream_the_server_breaks_off_is_broken_for_the_client_too_and_counted_as_502() -> None:
    async def scenario() -> None:
        async with echo_server() as upstream, proxied(upstream.url) as (proxy, session):
            async with session.post(f"{proxy.url}{CHAT}", json=STREAM_REQUEST) as response:
                with pytest.raises(aiohttp.ClientPayloadError):
                    await response.read()
            assert (await counts(proxy, session))[requests("502")] == 1

    run(scenario)


def test_a_client_that_leaves_before_the_answer_closes_the_servers_connection_and_is_counted() -> None:
    async def scenario() -> None:
        async with echo_server() as upstream, proxied(upstream.url) as (proxy, session):
            client = asyncio.create_task(session.post(f"{proxy.url}/v1/completions", json={"prompt": "Hi"}))
            await upstream.slow_started.wait()
            client.cancel()  # the client closes its connection while the server is still answering
            await upstream.slow_cancelled.wait()
            await counted(proxy, session, requests("499", "/v1/completions"))

    run(scenario)
