"""End to end, as processes: `modelgate refusal-proxy` in front of the model-server double, scraped
by the bed's real Prometheus under the labels of a Pod. Streams reach the client unchanged and
before they end; the refusal rate the presets compute is the share of refused answers."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import preset_query
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.localcluster import LocalCluster
from testbed.model_server_double import Behaviour
from testbed.proxied_double import ProxiedDouble, start_proxied_double
from testbed.waiting import wait_for

NAMESPACE = "serving"
POD = "chat-v2-5d8f9c7b6-x2k4q"
POD_REGEX = "chat-v2-[a-z0-9]+-[a-z0-9]+"
CHAT = "/v1/chat/completions"
CHAT_REQUEST = {"model": "chat-v2", "messages": [{"role": "user", "content": "Hello"}]}
SELECTOR = f'namespace="{NAMESPACE}",pod=~"{POD_REGEX}"'
# The refusalRate preset over the proxy's counters; a window that spans the whole test, so that
# both sums cover every answer.
REFUSAL_RATE = preset_query(
    "refusalRate", "vllm", QueryContext.for_rollout(NAMESPACE, "chat", "chat-v2", "5m")
)


@pytest.fixture
def sidecar(local_bed: LocalCluster) -> Iterator[ProxiedDouble]:
    pod = start_proxied_double(local_bed.processes, "chat-v2")
    target = f"{NAMESPACE}.{POD}.refusal-proxy"
    labels = {"namespace": NAMESPACE, "pod": POD, "container": "refusal-proxy"}
    local_bed.scrape_targets.add(target, pod.metrics_address, labels)
    try:
        yield pod
    finally:
        local_bed.scrape_targets.remove(target)
        pod.stop(local_bed.processes)


def post(url: str, body: Any, method: str = "POST") -> bytes:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method=method)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        answer: bytes = response.read()
        return answer


def set_behaviour(sidecar: ProxiedDouble, behaviour: Behaviour) -> None:
    post(f"{sidecar.server_url}/admin/behaviour", behaviour.model_dump(mode="json"), method="PUT")


def events(stream: bytes) -> list[Any]:
    """The stream's events, each answer's id and creation time blanked (they differ per request)."""
    data = [event.removeprefix(b"data: ") for event in stream.split(b"\n\n") if event]
    return [json.loads(d) | {"id": "", "created": 0} if d.startswith(b"{") else d.decode() for d in data]


def test_streams_pass_through_and_prometheus_sees_the_refusal_rate(
    local_bed: LocalCluster, sidecar: ProxiedDouble
) -> None:
    prometheus = PrometheusClient(local_bed.prometheus_url, timeout=2)
    # Exported at 0 before any request: the refusal rate has data as soon as requests arrive.
    wait_for(
        lambda: prometheus.query(f"sum(llm_refusals_total{{{SELECTOR}}})").value == 0,
        timeout=30,
        what="Prometheus to scrape the proxy's zero refusal counters",
    )

    set_behaviour(sidecar, Behaviour(hold_streams=True))
    streaming = urllib.request.Request(
        f"{sidecar.proxy_url}{CHAT}",
        data=json.dumps({**CHAT_REQUEST, "stream": True}).encode(),
        method="POST",
    )
    streaming.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(streaming, timeout=30) as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        # The double holds every stream after its first chunk until released: the client has the
        # first chunk while the last one does not exist yet.
        first = response.readline() + response.readline()
        assert events(first)[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert json.loads(post(f"{sidecar.server_url}/admin/release-streams", {})) == {"released": 1}
        through_proxy = first + response.read()
    set_behaviour(sidecar, Behaviour())
    direct = post(f"{sidecar.server_url}{CHAT}", {**CHAT_REQUEST, "stream": True})
    assert events(through_proxy) == events(direct)

    # A quarter refused in words, half of the requests streamed; then answers cut by a content filter.
    set_behaviour(sidecar, Behaviour(refusal_rate=0.25))
    for number in range(40):
        post(f"{sidecar.proxy_url}{CHAT}", {**CHAT_REQUEST, "stream": number % 2 == 0})
    set_behaviour(sidecar, Behaviour(refusal_rate=1.0, refusal_style="content_filter"))
    for number in range(5):
        post(f"{sidecar.proxy_url}{CHAT}", {**CHAT_REQUEST, "stream": number % 2 == 0})

    def scraped() -> dict[str, float | None] | None:
        # Requests first: once a scrape shows all 46, the refusals read after it come from that
        # scrape or a later one (the queries are separate; a scrape may land between them).
        if prometheus.query(f"sum(llm_requests_total{{{SELECTOR}}})").value != 46:
            return None
        refusals = {
            reason: prometheus.query(f'sum(llm_refusals_total{{{SELECTOR},reason="{reason}"}})').value
            for reason in ("pattern", "content_filter")
        }
        return refusals | {"requests": 46}

    assert wait_for(scraped, timeout=30, what="Prometheus to scrape all 46 requests") == {
        "pattern": 10,
        "content_filter": 5,
        "requests": 46,
    }
    refusal_rate = wait_for(
        lambda: prometheus.query(REFUSAL_RATE).value,
        timeout=30,
        what="the refusal rate query to have a value",
    )
    print(f"refusalRate over the proxy's counters: {refusal_rate:.4f} (15 of 46 answers: {15 / 46:.4f})")
    assert refusal_rate == pytest.approx(15 / 46, abs=0.01)
