"""The refusal proxy's recording, in this process in front of the model-server double: a seeded
per-request sample within its binomial bound, objects and the total within --record-max-bytes, a
failing store that costs metrics and never a request, and proxied bytes unchanged by recording."""

from __future__ import annotations

import asyncio
import functools
import json
import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from modelgate.recordings import newest_first, object_name
from modelgate.sidecar.proxy import RunningProxy
from modelgate.sidecar.recording import COPIES, DirectorySink, Recorder, RecordingMetrics, RecordingSettings
from testbed.model_server_double import Behaviour
from tests.unit.test_refusal_proxy import CHAT, double, proxied, run

RATE = 0.1
REQUESTS = 1000
# A 10% sample of 1,000 requests is Binomial(1000, 0.1): mean 100, standard deviation 9.49. Four
# standard deviations either side ([62, 138]) hold a fair draw with probability 1 - 6e-5.
BOUND = 4 * math.sqrt(REQUESTS * RATE * (1 - RATE))
# Through the proxy, fewer (the machine is shared): Binomial(300, 0.1), 30 +- 4 * 5.2.
PROXIED = 300
PROXIED_BOUND = 4 * math.sqrt(PROXIED * RATE * (1 - RATE))


def settings(root: Path, **changes: object) -> RecordingSettings:
    base = RecordingSettings(DirectorySink(root), str(root), rate=RATE, max_bytes=10**8, seed=7)
    return RecordingSettings(**(base.__dict__ | changes))  # type: ignore[arg-type]


def recorded(root: Path) -> list[dict[str, object]]:
    return [
        json.loads(line) for path in sorted(root.glob("*.jsonl")) for line in path.read_text().splitlines()
    ]


async def metric(proxy: RunningProxy, session: aiohttp.ClientSession, name: str, **labels: str) -> float:
    async with session.get(proxy.metrics_url) as response:
        text = await response.text()
    samples = [s for f in text_string_to_metric_families(text) for s in f.samples if s.name == name]
    return sum(s.value for s in samples if labels.items() <= s.labels.items())


async def eventually(read: Callable[[], Awaitable[float]], done: Callable[[float], bool], what: str) -> float:
    """The value `read` gives once `done` holds of it, polled for up to 10 s: records reach the
    recorder through a redaction thread, after their requests were answered."""
    deadline = asyncio.get_running_loop().time() + 10
    while not done(value := await read()):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{what} stayed at {value}")
        await asyncio.sleep(0.05)
    return value


async def ask(proxy: RunningProxy, session: aiohttp.ClientSession, numbers: range) -> None:
    async def one(number: int) -> None:
        body = {"messages": [{"role": "user", "content": f"request {number}"}], "stream": number % 2 == 0}
        async with session.post(f"{proxy.url}{CHAT}", json=body) as response:
            assert response.status == 200
            await response.read()

    for start in range(numbers.start, numbers.stop, 50):
        await asyncio.gather(*(one(n) for n in range(start, min(start + 50, numbers.stop))))


def test_the_draw_is_per_request_and_within_the_binomial_bound_for_every_seed() -> None:
    for seed in range(20):
        recorder = Recorder(settings(Path("unused"), seed=seed), RecordingMetrics(CollectorRegistry()))
        drawn = sum(recorder.sampled() is not None for _ in range(REQUESTS))
        assert abs(drawn - REQUESTS * RATE) <= BOUND, (seed, drawn)


def test_a_seeded_tenth_of_proxied_requests_is_recorded_within_the_bound(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            double(Behaviour()) as server,
            proxied(server.url, recording=settings(tmp_path)) as (
                proxy,
                session,
            ),
        ):
            await ask(proxy, session, range(PROXIED))
            await proxy.close()  # writes the last batch
            records = recorded(tmp_path)
            assert abs(len(records) - PROXIED * RATE) <= PROXIED_BOUND
            # The requests drawn, each once, with the answer it got; streamed ones assembled.
            prompts = [r["messages"][0]["content"] for r in records]  # type: ignore[index]
            assert len(set(prompts)) == len(records)
            assert all(isinstance(r["answer"], str) and r["answer"] for r in records)
            numbers = [int(str(p).split()[1]) for p in prompts]
            assert all(r.get("stream", False) == (n % 2 == 0) for r, n in zip(records, numbers, strict=True))

    run(scenario)


def test_objects_and_the_total_stay_within_their_bounds_and_the_stop_is_a_metric(tmp_path: Path) -> None:
    object_bytes, max_bytes = 2000, 9000
    limited = settings(tmp_path, rate=1.0, object_bytes=object_bytes, max_bytes=max_bytes)

    async def scenario() -> None:
        async with double(Behaviour()) as server, proxied(server.url, recording=limited) as (proxy, session):
            await ask(proxy, session, range(200))
            stopped = functools.partial(metric, proxy, session, "llm_recording_stopped")
            await eventually(stopped, lambda value: value == 1, "llm_recording_stopped")
            over = functools.partial(
                metric, proxy, session, "llm_recording_records_total", outcome="over_total_bytes"
            )
            await eventually(over, lambda value: value >= 1, "records over the total bytes")
            await proxy.close()  # writes the last batch

    run(scenario)
    objects = [path.read_bytes() for path in tmp_path.glob("*.jsonl")]
    sizes = [len(body) for body in objects]
    assert len(sizes) > 1 and max(sizes) <= object_bytes and sum(sizes) <= max_bytes
    # Stopped at the first record that did not fit, not before.
    longest = max(len(line) for body in objects for line in body.splitlines(keepends=True))
    assert sum(sizes) > max_bytes - longest


class FailingSink:
    async def put(self, name: str, body: bytes) -> None:
        raise OSError("the store is down")


def test_a_failing_store_costs_a_metric_and_a_log_line_never_a_request(tmp_path: Path) -> None:
    failing = settings(tmp_path, rate=1.0, sink=FailingSink(), batch_requests=10)

    async def scenario() -> None:
        async with double(Behaviour()) as server, proxied(server.url, recording=failing) as (proxy, session):
            with capture_logs() as logs:
                await ask(proxy, session, range(40))  # every request answered 200 (`ask` checks)

                async def counted() -> float:
                    outcomes = ("store_failed", "store_busy")
                    return sum(
                        [
                            await metric(proxy, session, "llm_recording_records_total", outcome=o)
                            for o in outcomes
                        ]
                    )

                await eventually(counted, lambda value: value == 40, "records failed or busy")
            failed = await metric(proxy, session, "llm_recording_records_total", outcome="store_failed")
            assert failed > 0
            assert any(log.get("error") == "the store is down" for log in logs)

    run(scenario)


def test_recorded_requests_reach_the_server_and_the_client_byte_for_byte(tmp_path: Path) -> None:
    """An echo server on the chat endpoint: what it received, and what the client got back, are the
    bytes sent, with recording at rate 1."""

    async def echo(request: web.Request) -> web.Response:
        body = await request.read()
        return web.Response(body=body, headers={"X-Seen": json.dumps(dict(request.headers))})

    app = web.Application()
    app.router.add_post(CHAT, echo)
    runner = web.AppRunner(app, access_log=None)
    body = json.dumps(
        {"messages": [{"role": "user", "content": "mail jane@example.com " + "x" * 70000}]}
    ).encode()

    async def scenario() -> None:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        upstream = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            async with proxied(upstream, recording=settings(tmp_path, rate=1.0)) as (proxy, session):
                sent = {"Content-Type": "application/json", "X-Request-Id": "r-1"}
                async with session.post(f"{proxy.url}{CHAT}", data=body, headers=sent) as response:
                    assert await response.read() == body
                    seen = CIMultiDict(json.loads(response.headers["X-Seen"]))
                assert seen["Content-Length"] == str(len(body)) and seen["X-Request-Id"] == "r-1"
                await proxy.close()
            assert [r["messages"] for r in recorded(tmp_path)] == [  # recorded, and redacted
                [{"role": "user", "content": "mail [REDACTED:email] " + "x" * 70000}]
            ]
        finally:
            await runner.cleanup()

    run(scenario)


def test_object_names_sort_newest_first_and_other_names_are_left_out() -> None:
    start = datetime(2026, 12, 5, 6, 0, tzinfo=UTC)
    names = [
        "recorded/" + object_name(start + timedelta(seconds=2), "chat-v1-7c9-abcde", 3),
        "recorded/" + object_name(start, "chat-v1-7c9-fghij", 1),
        "recorded/" + object_name(start + timedelta(seconds=9), "chat v1/../x", 2),  # a hostile source
        "recorded/notes.txt",
    ]
    ordered = newest_first(names)
    assert [time for _, time in ordered] == [start + timedelta(seconds=s) for s in (9, 2, 0)]
    assert "/../" not in ordered[0][0] and ordered[0][0].count("/") == 1


def test_redacting_a_hostile_request_does_not_stall_other_requests(tmp_path: Path) -> None:
    """Text slow to redact (a quarter of a second of one regular expression's search, holding the
    interpreter's lock, in a thread) is redacted in another process: requests proxied meanwhile are
    answered without waiting for it. (Under 1 MiB: the double takes no larger request.)"""
    hostile = json.dumps({"messages": [{"role": "user", "content": "1((" * 330_000}]}).encode()
    recording = settings(tmp_path, rate=1.0, object_bytes=2 * 1024 * 1024)

    async def scenario() -> None:
        async with (
            double(Behaviour()) as server,
            proxied(server.url, recording=recording) as (proxy, session),
        ):
            async with session.post(f"{proxy.url}{CHAT}", data=hostile) as response:
                await response.read()
            loop = asyncio.get_running_loop()
            deadline, slowest, answered = loop.time() + 30, 0.0, 0
            while not await metric(proxy, session, "llm_recording_records_total", outcome="written"):
                assert loop.time() < deadline
                recorder_of(proxy).flush()  # once redacted
                started = loop.time()
                async with session.get(f"{proxy.url}/v1/models") as response:
                    await response.read()
                slowest, answered = max(slowest, loop.time() - started), answered + 1
            assert answered > 3 and slowest < 0.12, (answered, slowest)
            await proxy.close()

    run(scenario)
    (record,) = recorded(tmp_path)
    assert record["messages"] == [{"role": "user", "content": "[REDACTED:number](("}]


def recorder_of(proxy: RunningProxy) -> Recorder:
    recorder = proxy.proxy._recorder
    assert recorder is not None
    return recorder


def test_the_copies_of_requests_being_recorded_share_one_bound(tmp_path: Path) -> None:
    """Six requests drawn at once, each copy within an object but together over COPIES objects: the
    copies that do not fit are not kept (too_large), and the requests are answered all the same."""
    object_bytes = 100_000
    recording = settings(tmp_path, rate=1.0, object_bytes=object_bytes)
    body = {"messages": [{"role": "user", "content": "x" * int(object_bytes * 0.9)}], "stream": True}

    async def scenario() -> None:
        async with (
            double(Behaviour(hold_streams=True)) as server,
            proxied(server.url, recording=recording) as (
                proxy,
                session,
            ),
        ):

            async def one() -> int:
                async with session.post(f"{proxy.url}{CHAT}", json=body) as response:
                    await response.read()
                    return response.status

            answers = [asyncio.create_task(one()) for _ in range(COPIES + 2)]
            deadline = asyncio.get_running_loop().time() + 20
            while await metric(proxy, session, "llm_recording_drawn_requests_total") < COPIES + 2:
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.2)  # every body through the proxy, each answer held after its first chunk
            async with session.post(f"{server.url}/admin/release-streams") as released:
                await released.read()
            assert await asyncio.gather(*answers) == [200] * (COPIES + 2)
            # The four copies kept then wait for redaction, within its own bound (one object's bytes).
            outcomes = ("too_large", "written", "redaction_busy")
            while (done := [await recorded_outcome(proxy, session, o) for o in outcomes])[0] != 2 or sum(
                done[1:]
            ) != 4:
                assert asyncio.get_running_loop().time() < deadline, done
                recorder_of(proxy).flush()
                await asyncio.sleep(0.05)

    run(scenario)


async def recorded_outcome(proxy: RunningProxy, session: aiohttp.ClientSession, outcome: str) -> float:
    return await metric(proxy, session, "llm_recording_records_total", outcome=outcome)
