"""The model server double: exact outcome counts, vLLM's metric names, the admin API and the CLI."""

from __future__ import annotations

import asyncio
import json
import math
import select
import subprocess
import sys
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from testbed.model_server_double import (
    Behaviour,
    Latency,
    RunningServer,
    start_model_server,
)
from testbed.shares import EvenSpread, exact_rate

T = TypeVar("T")
MODEL = "chat-v1"
CHAT_REQUEST = {"messages": [{"role": "user", "content": "Hello there"}]}
Scenario = Callable[[RunningServer, aiohttp.ClientSession], Awaitable[T]]


def with_double(behaviour: Behaviour, scenario: Scenario[T], *, refusal_counters: bool = True) -> T:
    async def run() -> T:
        server = await start_model_server(behaviour, model_name=MODEL, refusal_counters=refusal_counters)
        try:
            async with aiohttp.ClientSession() as session:
                return await scenario(server, session)
        finally:
            await server.close()

    return asyncio.run(run())


async def chat(server: RunningServer, session: aiohttp.ClientSession, n: int) -> list[tuple[int, Any]]:
    answers = []
    for _ in range(n):
        async with session.post(f"{server.url}/v1/chat/completions", json=CHAT_REQUEST) as response:
            answers.append((response.status, await response.json()))
    return answers


async def scrape(server: RunningServer, session: aiohttp.ClientSession) -> str:
    async with session.get(f"{server.url}/metrics") as response:
        assert response.status == 200
        return await response.text()


def samples(metrics_text: str, name: str) -> dict[frozenset[tuple[str, str]], float]:
    """Values of the samples called `name`, keyed by their label sets."""
    return {
        frozenset(sample.labels.items()): sample.value
        for family in text_string_to_metric_families(metrics_text)
        for sample in family.samples
        if sample.name == name
    }


def value(metrics_text: str, name: str, **labels: str) -> float:
    return samples(metrics_text, name)[frozenset(labels.items())]


def test_error_rate_fails_exactly_that_share_of_requests() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[Counter[int], str]:
        answers = await chat(server, session, 200)
        return Counter(status for status, _ in answers), await scrape(server, session)

    statuses, metrics = with_double(Behaviour(error_rate=0.08), scenario)

    assert statuses == {200: 184, 500: 16}
    assert 'http_requests_total{handler="/v1/chat/completions",method="POST",status="500"} 16.0' in metrics
    assert (
        value(metrics, "http_requests_total", method="POST", handler="/v1/chat/completions", status="200")
        == 184
    )
    assert (
        value(metrics, "vllm:request_success_total", model_name=MODEL, engine="0", finished_reason="stop")
        == 184
    )


def test_refusals_answer_200_and_are_counted() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[list[Any], str]:
        return await chat(server, session, 200), await scrape(server, session)

    answers, metrics = with_double(Behaviour(error_rate=0.08, refusal_rate=0.1), scenario)

    refusals = [
        body
        for status, body in answers
        if status == 200 and body["choices"][0]["message"]["content"].startswith("I'm sorry")
    ]
    assert len(refusals) == 20  # a share of all 200 requests, though drawn from those that did not fail
    assert all(body["choices"][0]["finish_reason"] == "stop" for body in refusals)
    # What the refusal proxy in the pod would count: every request, and the refusals among them.
    assert value(metrics, "llm_refusals_total", model=MODEL, reason="pattern") == 20
    assert (
        sum(
            value(metrics, "llm_requests_total", model=MODEL, endpoint="/v1/chat/completions", code=code)
            for code in ("200", "500")
        )
        == 200
    )
    assert (
        value(metrics, "vllm:request_success_total", model_name=MODEL, engine="0", finished_reason="stop")
        == 184
    )


def test_content_filter_refusals_cut_the_answer_and_say_why() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> list[Any]:
        return await chat(server, session, 2)

    answers = with_double(Behaviour(refusal_rate=0.5, refusal_style="content_filter"), scenario)

    filtered = [
        body["choices"][0] for _, body in answers if body["choices"][0]["finish_reason"] == "content_filter"
    ]
    assert len(filtered) == 1
    assert filtered[0]["message"]["content"] == "This is a"


def test_a_streamed_answer_is_the_same_answer_in_server_sent_events() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[Any, bytes]:
        async with session.post(f"{server.url}/v1/chat/completions", json=CHAT_REQUEST) as response:
            whole = await response.json()
        async with session.post(
            f"{server.url}/v1/chat/completions", json={**CHAT_REQUEST, "stream": True}
        ) as response:
            assert response.content_type == "text/event-stream"
            return whole, await response.read()

    whole, stream = with_double(Behaviour(), scenario)

    events = [event.removeprefix(b"data: ") for event in stream.split(b"\n\n") if event]
    assert events[-1] == b"[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == MODEL for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole["choices"][0]["message"]["content"]
    assert [c["choices"][0]["finish_reason"] for c in chunks][-2:] == [None, "stop"]


def test_held_streams_wait_after_their_first_chunk_until_released() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[int, bytes]:
        async with session.post(
            f"{server.url}/v1/chat/completions", json={**CHAT_REQUEST, "stream": True}
        ) as response:
            first = await response.content.readuntil(b"\n\n")
            async with session.post(f"{server.url}/admin/release-streams") as released:
                held = (await released.json())["released"]
            return held, first + await response.read()

    held, stream = with_double(Behaviour(hold_streams=True), scenario)

    assert held == 1
    assert stream.endswith(b"data: [DONE]\n\n")


def test_slow_tail_shows_in_the_top_buckets_while_the_median_stays_fast() -> None:
    latency = Latency(median=0.2, tail_rate=0.05, tail_latency=12.0)

    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> str:
        await chat(server, session, 100)
        return await scrape(server, session)

    metrics = with_double(Behaviour(latency=latency), scenario)

    def bucket(le: str) -> float:
        return value(metrics, "vllm:e2e_request_latency_seconds_bucket", model_name=MODEL, engine="0", le=le)

    assert bucket("0.3") == 95
    assert bucket("10.0") == 95
    assert bucket("15.0") == 100
    assert value(
        metrics, "vllm:e2e_request_latency_seconds_sum", model_name=MODEL, engine="0"
    ) == pytest.approx(95 * 0.2 + 5 * 12)
    # Time to first token defaults to a tenth of the latency.
    assert (
        value(metrics, "vllm:time_to_first_token_seconds_bucket", model_name=MODEL, engine="0", le="0.02")
        == 95
    )
    assert (
        value(metrics, "vllm:time_to_first_token_seconds_bucket", model_name=MODEL, engine="0", le="2.5")
        == 100
    )


def test_exposes_vllm_series_by_their_exact_names() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> str:
        await chat(server, session, 10)
        return await scrape(server, session)

    metrics = with_double(Behaviour(error_rate=0.1, refusal_rate=0.1, requests_waiting=3), scenario)
    names = {sample.name for family in text_string_to_metric_families(metrics) for sample in family.samples}

    assert {
        "vllm:e2e_request_latency_seconds_bucket",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:request_success_total",
        "http_requests_total",
        "llm_refusals_total",
        "llm_requests_total",
        "vllm:num_requests_waiting",
        "vllm:request_time_per_output_token_seconds_bucket",
        "vllm:generation_tokens_total",
    } <= names
    assert value(metrics, "vllm:num_requests_waiting", model_name=MODEL, engine="0") == 3


def test_small_max_tokens_stops_for_length() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[Any, str]:
        request = {**CHAT_REQUEST, "max_tokens": 3}
        async with session.post(f"{server.url}/v1/chat/completions", json=request) as response:
            body = await response.json()
        return body, await scrape(server, session)

    body, metrics = with_double(Behaviour(), scenario)

    assert body["choices"][0]["finish_reason"] == "length"
    assert body["usage"]["completion_tokens"] == 3
    assert (
        value(metrics, "vllm:request_success_total", model_name=MODEL, engine="0", finished_reason="length")
        == 1
    )


def test_stream_that_is_not_a_boolean_is_a_400() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[int, Any]:
        async with session.post(
            f"{server.url}/v1/chat/completions", json={**CHAT_REQUEST, "stream": "yes"}
        ) as r:
            return r.status, await r.json()

    status, body = with_double(Behaviour(), scenario)

    assert status == 400
    assert "stream must be true or false" in body["message"]


def test_chat_request_without_messages_is_a_400() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[int, Any]:
        async with session.post(f"{server.url}/v1/chat/completions", json={"prompt": "hi"}) as response:
            return response.status, await response.json()

    status, body = with_double(Behaviour(), scenario)

    assert status == 400
    assert "messages" in body["message"]


def test_admin_put_updates_only_the_given_knobs() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[Any, Counter[int]]:
        change = {"error_rate": 1.0, "latency": {"tail_rate": 0.5, "tail_latency": 3.0}}
        async with session.put(f"{server.url}/admin/behaviour", json=change) as response:
            assert response.status == 200
        async with session.get(f"{server.url}/admin/behaviour") as response:
            current = await response.json()
        return current, Counter(status for status, _ in await chat(server, session, 4))

    current, statuses = with_double(Behaviour(latency=Latency(median=0.4)), scenario)

    assert current["error_rate"] == 1.0
    assert current["latency"] == {
        "median": 0.4,
        "tail_rate": 0.5,
        "tail_latency": 3.0,
        "ttft": None,
        "tpot": None,
    }
    assert statuses == {500: 4}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"latency": {"tail_rate": 1.5}}, "latency.tail_rate"),
        ({"eror_rate": 0.1}, "eror_rate"),
        ({"error_rate": "lots"}, "error_rate"),
        ({"error_rate": 0.6, "refusal_rate": 0.6}, "error_rate + abort_rate + refusal_rate"),
        ({"source": "ollama"}, "source"),
        ({"latency": {"tpot": 0.05}}, "tpot needs ttft"),
        ({"latency": {"tail_rate": 0.1, "tail_latency": 0.01}}, "tail_latency"),
    ],
)
def test_admin_rejects_bad_knobs_naming_the_field(change: dict[str, Any], field: str) -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[int, Any]:
        async with session.put(f"{server.url}/admin/behaviour", json=change) as response:
            return response.status, await response.json()

    behaviour = Behaviour(error_rate=0.2)
    status, body = with_double(behaviour, scenario)

    assert status == 400
    assert field in body["error"]


def test_admin_rejects_a_body_that_is_not_an_object() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[int, Behaviour]:
        async with session.put(f"{server.url}/admin/behaviour", json=[0.5]) as response:
            return response.status, server.behaviour

    status, behaviour = with_double(Behaviour(error_rate=0.2), scenario)

    assert status == 400
    assert behaviour == Behaviour(error_rate=0.2)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(rate=st.floats(min_value=0, max_value=1), n=st.integers(min_value=1, max_value=400))
def test_even_spread_says_yes_to_exactly_the_rounded_share(rate: float, n: int) -> None:
    spread = EvenSpread(exact_rate(rate))
    assert sum(spread.next() for _ in range(n)) == math.floor(n * exact_rate(rate) + Fraction(1, 2))


def test_listens_on_loopback_only() -> None:
    with pytest.raises(ValueError, match="loopback"):
        asyncio.run(start_model_server(host="0.0.0.0"))


def test_cli_with_port_zero_prints_where_it_listens(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "testbed.model_server_double",
        "--port",
        "0",
        "--model-name",
        "cli",
    ]
    stderr_log = tmp_path / "stderr.log"
    with (
        stderr_log.open("wb") as stderr,
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr) as process,
    ):
        try:
            assert process.stdout is not None
            ready, _, _ = select.select([process.stdout], [], [], 30)
            assert ready, f"no listening line; stderr: {stderr_log.read_text()}"
            host, port = json.loads(process.stdout.readline())["listening"].rsplit(":", 1)

            assert host == "127.0.0.1"
            assert listening_addresses(int(port)) == {"0100007F"}  # 127.0.0.1 in /proc/net/tcp's byte order
            no_proxy = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with no_proxy.open(f"http://127.0.0.1:{port}/healthz", timeout=10) as response:
                assert response.read() == b"ok"
        finally:
            process.terminate()  # by its pid
            exit_code = process.wait(timeout=30)
    assert exit_code == 0


def listening_addresses(port: int) -> set[str]:
    """Local addresses of the listening TCP sockets on `port`, IPv4 and IPv6."""
    addresses = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.rsplit(":", 1)
            if state == "0A" and int(port_hex, 16) == port:  # 0A: LISTEN
                addresses.add(address)
    return addresses


def test_timing_is_consistent_ttft_plus_tokens_times_tpot() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> str:
        await chat(server, session, 40)
        return await scrape(server, session)

    latency = Latency(ttft=0.3, tpot=0.05)
    metrics = with_double(Behaviour(latency=latency, output_tokens=20, refusal_rate=0.25), scenario)

    def mean(name: str) -> float:
        labels = {"model_name": MODEL, "engine": "0"}
        return value(metrics, f"{name}_sum", **labels) / value(metrics, f"{name}_count", **labels)

    # 30 answers of 20 tokens (1.25 s) and 10 refusals of 8 words (0.3 + 7 x 0.05 = 0.65 s).
    assert mean("vllm:e2e_request_latency_seconds") == pytest.approx((30 * 1.25 + 10 * 0.65) / 40)
    assert mean("vllm:time_to_first_token_seconds") == pytest.approx(0.3)
    assert mean("vllm:request_time_per_output_token_seconds") == pytest.approx(0.05)
    assert value(metrics, "vllm:generation_tokens_total", model_name=MODEL, engine="0") == 30 * 20 + 10 * 8


def test_aborts_are_that_share_and_recorded_as_the_stack_records_them() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> tuple[Counter[int], str]:
        statuses = Counter(status for status, _ in await chat(server, session, 100))
        return statuses, await scrape(server, session)

    statuses, metrics = with_double(Behaviour(abort_rate=0.25, error_rate=0.1), scenario)

    assert statuses == {200: 65, 499: 25, 500: 10}
    assert (
        value(metrics, "vllm:request_success_total", model_name=MODEL, engine="0", finished_reason="abort")
        == 25
    )


# The series each stack's presets read (docs/presets.md), by their upstream names.
STACK_SERIES = {
    "sglang": {
        "sglang:http_responses_total",
        "sglang:num_aborted_requests_total",
        "sglang:time_to_first_token_seconds_bucket",
        "sglang:inter_token_latency_seconds_bucket",
        "sglang:e2e_request_latency_seconds_count",
        "sglang:generation_tokens_total",
        "sglang:num_queue_reqs",
    },
    "tgi": {
        "tgi_request_count",
        "tgi_request_failure",
        "tgi_request_duration_bucket",
        "tgi_request_mean_time_per_token_duration_bucket",
        "tgi_request_generated_tokens_sum",
        "tgi_queue_size",
    },
    "triton": {
        "nv_inference_request_success",
        "nv_inference_request_failure",
        "nv_inference_first_response_histogram_ms_bucket",
        "nv_inference_pending_request_count",
    },
    "llm-d": {
        "inference_objective_request_total",
        "inference_objective_request_error_total",
        "inference_objective_request_ttft_seconds_bucket",
        "inference_objective_request_tpot_seconds_bucket",
        "inference_objective_request_duration_seconds_count",
        "inference_objective_output_tokens_sum",
    },
    "istio": {"istio_requests_total", "istio_request_duration_milliseconds_bucket"},
}


@pytest.mark.parametrize("source", sorted(STACK_SERIES))
def test_each_source_exports_its_stacks_names_and_no_vllm_names(source: str) -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> str:
        await chat(server, session, 20)
        return await scrape(server, session)

    behaviour = Behaviour(source=source, error_rate=0.1, abort_rate=0.1, refusal_rate=0.1)
    metrics = with_double(behaviour, scenario)
    names = {sample.name for family in text_string_to_metric_families(metrics) for sample in family.samples}

    assert STACK_SERIES[source] | {"llm_refusals_total", "llm_requests_total"} <= names
    assert not any(name.startswith("vllm:") or name == "http_requests_total" for name in names)


def test_refusal_counters_are_left_to_a_real_proxy_when_asked() -> None:
    async def scenario(server: RunningServer, session: aiohttp.ClientSession) -> str:
        await chat(server, session, 10)
        return await scrape(server, session)

    metrics = with_double(Behaviour(refusal_rate=0.5), scenario, refusal_counters=False)
    names = {sample.name for family in text_string_to_metric_families(metrics) for sample in family.samples}

    assert "vllm:request_success_total" in names
    assert not names & {"llm_requests_total", "llm_refusals_total"}
