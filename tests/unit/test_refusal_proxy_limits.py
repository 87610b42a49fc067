"""The refusal proxy under attack, over real sockets on 127.0.0.1: a huge stream does not grow the
proxy's memory (measured on a proxy process), model names chosen by clients do not grow its series,
a client that sends its headers a byte at a time is cut off, connections past the limit are
refused, and a server that goes silent is answered 504."""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
from aiohttp import web

from modelgate.sidecar.connections import LINGER, ConnectionLimits
from testbed.ports import free_port
from testbed.processes import MODELGATE_ENTRY, ProcessRegistry
from testbed.proxied_double import answers_healthz
from testbed.waiting import wait_for
from tests.unit.test_refusal_proxy import CHAT, STREAM_REQUEST, counted, counts, proxied, requests, run

STREAMED_BYTES = 50 * 1024 * 1024
EVENT_TEXT = "x" * 1000
REFUSAL = "I'm sorry, but I cannot help with that."


def event(content: str, finish_reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": finish_reason}
    return b"data: " + json.dumps({"model": "chat-v1", "choices": [choice]}).encode() + b"\n\n"


@asynccontextmanager
async def hostile_upstream() -> AsyncIterator[str]:
    """Chat completions: a stream of `{"bytes": N}` bytes whose last words are a refusal, or a JSON
    answer naming the model the client asked for (as servers that echo it do). Completions: the
    server goes silent, after a first chunk if the client asked for a stream."""

    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            choice = {"index": 0, "message": {"content": "Hi"}, "finish_reason": "stop"}
            return web.json_response({"model": body["model"], "choices": [choice]})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        one = event(EVENT_TEXT)
        for _ in range(-(-body["bytes"] // len(one))):  # at least the bytes asked for
            await response.write(one)
        await response.write(event(REFUSAL, "stop") + b"data: [DONE]\n\n")
        return response

    async def silent(request: web.Request) -> web.StreamResponse:
        if (await request.json()).get("stream"):
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(event("Hel"))
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"data": []})

    app = web.Application()
    app.router.add_post(CHAT, chat)
    app.router.add_post("/v1/completions", silent)
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def peak_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1])


def test_a_50_mb_stream_passes_through_a_proxy_process_without_growing_its_memory(tmp_path: Path) -> None:
    async def stream(session: aiohttp.ClientSession, url: str, size: int) -> int:
        async with session.post(f"{url}{CHAT}", json={**STREAM_REQUEST, "bytes": size}) as response:
            received = 0
            async for chunk in response.content.iter_any():
                received += len(chunk)
            return received

    async def scenario() -> None:
        async with hostile_upstream() as upstream, aiohttp.ClientSession() as session:
            registry = ProcessRegistry(tmp_path)
            port, metrics_port = free_port(), free_port()
            args = ["refusal-proxy", "--upstream", upstream, "--port", str(port)]
            args += ["--metrics-port", str(metrics_port), "--model", "chat-v1"]
            process = registry.start_python("refusal-proxy", MODELGATE_ENTRY, args)
            try:
                url = f"http://127.0.0.1:{port}"
                await asyncio.to_thread(
                    wait_for,
                    functools.partial(answers_healthz, metrics_port),
                    timeout=60,
                    what="the proxy process to answer /healthz",
                )
                await stream(session, url, 1024 * 1024)  # every code path loaded: the baseline
                before = peak_rss_kib(process.pid)
                received = await stream(session, url, STREAMED_BYTES)
                growth = peak_rss_kib(process.pid) - before
                print(f"proxy peak RSS {before} KiB, +{growth} KiB over a {received >> 20} MiB stream")
                assert received >= STREAMED_BYTES
                assert growth < 16 * 1024, f"peak RSS grew by {growth} KiB over a {received >> 20} MiB stream"
                # The refusal at the very end was still read: the text's tail is classified.
                async with session.get(f"http://127.0.0.1:{metrics_port}/metrics") as response:
                    metrics = await response.text()
                assert 'llm_refusals_total{model="chat-v1",reason="pattern"} 2.0' in metrics
            finally:
                await asyncio.to_thread(registry.stop, process)

    run(scenario, timeout=180)


def series_of(found: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> set[str]:
    return {dict(labels)["model"] for _, labels in found}


def test_model_names_sent_by_clients_do_not_grow_the_series() -> None:
    async def ask(session: aiohttp.ClientSession, url: str, model: str) -> None:
        async with session.post(f"{url}{CHAT}", json={"model": model, "messages": []}) as response:
            assert response.status == 200
            await response.read()

    async def scenario() -> None:
        names = [f"model-{n}" for n in range(300)]
        async with hostile_upstream() as upstream:
            async with proxied(upstream) as (proxy, session):  # --model chat-v1: the only label
                for name in ["chat-v1", *names]:
                    await ask(session, proxy.url, name)
                found = await counts(proxy, session)
                assert series_of(found) == {"chat-v1", "other"}
                assert found[requests("200")] == 1
                assert found[requests("200", model="other")] == 300
            async with proxied(upstream, models=(), max_model_labels=3) as (proxy, session):
                for name in names:
                    await ask(session, proxy.url, name)
                found = await counts(proxy, session)
                assert series_of(found) == {*names[:3], "other"}
                assert len(found) <= 4 * 6  # per label: 2 endpoints at 200 + 2 reasons, + codes seen

    run(scenario)


async def raw_connection(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection("127.0.0.1", port)


async def get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> bytes:
    """One keep-alive GET on an open connection; the status line of its answer."""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: proxy\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)
    return head.split(b"\r\n")[0]


def test_a_client_sending_its_headers_a_byte_a_second_is_cut_off_within_the_timeout() -> None:
    async def scenario() -> None:
        limits = ConnectionLimits(header_timeout=2.0)
        async with hostile_upstream() as upstream, proxied(upstream, connections=limits) as (proxy, _):
            port = int(proxy.url.rsplit(":", 1)[1])
            started = time.monotonic()  # before the connection: the proxy's timeout starts at its accept
            reader, writer = await raw_connection(port)
            answer = b""
            for byte in b"POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nX-Slow: " + b"a" * 60:
                writer.write(bytes([byte]))
                try:
                    # What has arrived, not a read to EOF: a read cancelled by the timeout loses its data.
                    answer = await asyncio.wait_for(reader.read(4096), timeout=1.0)
                    break
                except TimeoutError:
                    continue
            elapsed = time.monotonic() - started
            assert answer.startswith(b"HTTP/1.1 408"), answer
            assert limits.header_timeout <= elapsed < limits.header_timeout + 1.5, elapsed
            # Then closed: the rest of the answer and the end of the stream, within the linger.
            await asyncio.wait_for(reader.read(), timeout=LINGER.total_seconds() + 1)
            assert reader.at_eof()
            writer.close()

    run(scenario)


def test_the_header_timeout_spares_slow_answers_and_idle_keep_alive_connections() -> None:
    async def scenario() -> None:
        limits = ConnectionLimits(header_timeout=0.5)
        async with hostile_upstream() as upstream, proxied(upstream, connections=limits) as (proxy, _):
            reader, writer = await raw_connection(int(proxy.url.rsplit(":", 1)[1]))
            assert await get(reader, writer, "/v1/models") == b"HTTP/1.1 200 OK"
            await asyncio.sleep(1.5)  # idle for three header timeouts: not cut off
            assert await get(reader, writer, "/v1/models") == b"HTTP/1.1 200 OK"
            writer.close()

    run(scenario)


def test_connections_past_the_limit_are_refused_until_one_closes() -> None:
    async def scenario() -> None:
        limits = ConnectionLimits(max_connections=4)
        async with hostile_upstream() as upstream, proxied(upstream, connections=limits) as (proxy, _):
            port = int(proxy.url.rsplit(":", 1)[1])
            held = [await raw_connection(port) for _ in range(limits.max_connections)]
            for reader, writer in held:  # each is served
                assert await get(reader, writer, "/v1/models") == b"HTTP/1.1 200 OK"
            reader, writer = await raw_connection(port)
            refused = await asyncio.wait_for(reader.read(), timeout=5)
            assert refused.startswith(b"HTTP/1.1 503"), refused
            writer.close()
            held.pop()[1].close()

            async def served() -> bytes:
                reader, writer = await raw_connection(port)
                try:
                    return await get(reader, writer, "/v1/models")
                except asyncio.IncompleteReadError:
                    return b"refused"
                finally:
                    writer.close()

            deadline = time.monotonic() + 5
            while (status := await served()) != b"HTTP/1.1 200 OK":
                assert time.monotonic() < deadline, f"no connection accepted after one closed: {status!r}"
                await asyncio.sleep(0.05)
            for _, writer in held:
                writer.close()

    run(scenario)


def test_a_server_that_goes_silent_is_answered_504_and_counted() -> None:
    async def scenario() -> None:
        async with (
            hostile_upstream() as upstream,
            proxied(upstream, upstream_read_timeout=1.0) as (proxy, session),
        ):
            started = time.monotonic()
            async with session.post(f"{proxy.url}/v1/completions", json={"prompt": "Hi"}) as response:
                assert response.status == 504
                assert (await response.json())["code"] == 504
            assert time.monotonic() - started < 5
            await counted(proxy, session, requests("504", "/v1/completions"))
            # Silent after the first chunk of a stream: the client's stream is broken off, not ended.
            async with session.post(
                f"{proxy.url}/v1/completions", json={"prompt": "Hi", "stream": True}
            ) as response:
                assert response.status == 200
                try:
                    await response.read()
                    broken = False
                except aiohttp.ClientPayloadError:
                    broken = True
            assert broken
            found = await counts(proxy, session)
            assert found[requests("504", "/v1/completions")] == 2

    run(scenario)
