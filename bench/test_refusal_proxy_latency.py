"""The latency `modelgate refusal-proxy` adds: the same requests to the model-server double directly
and through the proxy, both as processes on this machine, the double answering at once (no simulated
latency), so the difference is the proxy's cost. Answers as JSON and as streams (time to the first
event and to the end), one client at a time and 16 at once; direct and proxied batches alternate so
that both see the same load on the machine."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from bench.report import record, summary
from testbed.processes import ProcessRegistry
from testbed.proxied_double import start_proxied_double

pytestmark = pytest.mark.bench

CHAT = "/v1/chat/completions"
CHAT_REQUEST = {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 64}
BATCHES = 20
BATCH = 50  # requests per batch and route: 1,000 per route and variant


@dataclass(frozen=True)
class Routes:
    direct: str
    proxied: str


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Routes]:
    processes = ProcessRegistry(Path(tmp_path_factory.mktemp("refusal-proxy-bench")))
    pod = start_proxied_double(processes, "chat-model")
    try:
        yield Routes(f"{pod.server_url}{CHAT}", f"{pod.proxy_url}{CHAT}")
    finally:
        pod.stop(processes)


@dataclass
class Timings:
    first_byte: list[float]
    total: list[float]


async def _one(session: aiohttp.ClientSession, url: str, stream: bool, timings: Timings) -> None:
    started = time.perf_counter()
    async with session.post(url, json={**CHAT_REQUEST, "stream": stream}) as response:
        assert response.status == 200
        await response.content.readany()  # a stream's first event, or the start of a JSON answer
        timings.first_byte.append(time.perf_counter() - started)
        await response.read()
    timings.total.append(time.perf_counter() - started)


async def _batch(
    session: aiohttp.ClientSession, url: str, stream: bool, concurrency: int, into: Timings
) -> None:
    queue = iter(range(BATCH))

    async def client() -> None:
        for _ in queue:
            await _one(session, url, stream, into)

    await asyncio.gather(*(client() for _ in range(concurrency)))


async def _measure(routes: Routes, stream: bool, concurrency: int) -> dict[str, Timings]:
    timings = {"direct": Timings([], []), "proxied": Timings([], [])}
    connector = aiohttp.TCPConnector(limit=concurrency * 2)
    async with aiohttp.ClientSession(connector=connector) as session:
        await _batch(session, routes.direct, stream, concurrency, Timings([], []))  # warm-up
        await _batch(session, routes.proxied, stream, concurrency, Timings([], []))
        for _ in range(BATCHES):
            await _batch(session, routes.direct, stream, concurrency, timings["direct"])
            await _batch(session, routes.proxied, stream, concurrency, timings["proxied"])
    return timings


def _milliseconds(seconds: list[float]) -> dict[str, float]:
    return {key: round(value * 1000, 3) if key != "n" else value for key, value in summary(seconds).items()}


@pytest.mark.parametrize("concurrency", [1, 16], ids=["1-client", "16-clients"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_refusal_proxy_added_latency(routes: Routes, stream: bool, concurrency: int) -> None:
    timings = asyncio.run(_measure(routes, stream, concurrency))
    results: dict[str, dict[str, dict[str, float]]] = {}
    for measure in ("first_byte", "total"):
        direct = _milliseconds(getattr(timings["direct"], measure))
        proxied = _milliseconds(getattr(timings["proxied"], measure))
        added = {q: round(proxied[q] - direct[q], 3) for q in ("median", "p99")}
        results[measure] = {"direct_ms": direct, "proxied_ms": proxied, "added_ms": added}
    name = f"refusal-proxy-{'stream' if stream else 'json'}-{concurrency}"
    record(name, {"stream": stream, "concurrency": concurrency, **results})
