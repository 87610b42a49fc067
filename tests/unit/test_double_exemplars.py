"""The double's trace IDs: a caller's traceparent is kept, each request is recorded with its status,
and a scraper asking for OpenMetrics gets them as exemplars on the error counter and the latency
histogram, under the stack's own names."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from testbed.model_server_double import Behaviour, start_model_server

OPENMETRICS = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CHAT = {"messages": [{"role": "user", "content": "Hello"}]}


def serve_four_requests() -> tuple[list[tuple[int, str]], list[dict[str, Any]], str, str]:
    async def run() -> tuple[list[tuple[int, str]], list[dict[str, Any]], str, str]:
        server = await start_model_server(Behaviour(error_rate=0.5), model_name="chat-v2")
        try:
            async with aiohttp.ClientSession() as session:
                answers = []
                for number in range(4):
                    headers = {"traceparent": f"00-{CALLER_TRACE}-00f067aa0ba902b7-01"} if number == 0 else {}
                    async with session.post(
                        f"{server.url}/v1/chat/completions", json=CHAT, headers=headers
                    ) as r:
                        answers.append((r.status, r.headers["traceparent"].split("-")[1]))
                async with session.get(f"{server.url}/admin/traces") as r:
                    recorded = await r.json()
                async with session.get(f"{server.url}/metrics", headers={"Accept": OPENMETRICS}) as r:
                    openmetrics = await r.text()
                async with session.get(f"{server.url}/metrics") as r:
                    text = await r.text()
                return answers, recorded, openmetrics, text
        finally:
            await server.close()

    return asyncio.run(run())


def test_trace_ids_are_recorded_and_served_as_exemplars() -> None:
    answers, recorded, openmetrics, text = serve_four_requests()
    assert answers[0][1] == CALLER_TRACE
    assert [(r["status"], r["traceId"]) for r in recorded] == answers
    failed = {trace for status, trace in answers if status == 500}
    answered = {trace for status, trace in answers if status == 200}
    exemplars = {
        sample.name: sample.exemplar.labels["trace_id"]
        for family in text_string_to_metric_families(openmetrics)
        for sample in family.samples
        if sample.exemplar is not None
    }
    # The latest request of each series is its exemplar.
    assert exemplars["http_requests_total"] in failed
    assert exemplars["vllm:e2e_request_latency_seconds_bucket"] in answered
    assert "# {" not in text  # the classic text format has no exemplars, and is what others get
