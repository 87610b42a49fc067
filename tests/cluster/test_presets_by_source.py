"""Every preset of every model-server source, measured by the bed's real Prometheus scraping
model-server doubles that export exactly that stack's series: the values match the doubles' knobs.
One double per source, all serving at once; every preset is queried against them. A preset a stack
lacks raises UnknownPresetError naming the source. The gateway source `traefik` is measured on the
real Traefik instead (test_simulated_presets.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pytest
from kubernetes import client

from modelgate.api.goodput_targets import GoodputTargets
from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import PRESETS, STACKS, UnknownPresetError, available, preset_query
from modelgate.metrics.presets import request_count_query as requests_query
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.exporters import istio, llmd, sglang, tgi, triton, vllm
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.manifests import http_route, model_deployment
from testbed.model_server_double import REFUSAL, Behaviour, Latency
from testbed.traffic_driver import BackgroundTraffic, HTTPRouteWatcher, TrafficDriver
from testbed.waiting import WaitTimeout, wait_for
from tests.support.kube import create, scratch_namespace

# The model servers' stacks, each exported by a double; a gateway's series come from the gateway.
DOUBLED = [source for source in STACKS if source != "traefik"]
# Short windows: the doubles' behaviour is constant, and the test should not wait a minute.
WINDOW = "10s"
WINDOW_SECONDS = 10
TTFT, TPOT, TOKENS, TAIL_LATENCY = 0.3, 0.05, 20, 8.0
# Targets every answer meets, the tail's 0.405 s per token included, whatever a stack's buckets: the
# goodput is then every request with a first token (the rounding and the late tokens: unit tests).
GOODPUT = GoodputTargets(ttft=0.5, tpot=1.0)
PRICE = 2.0  # per accelerator-hour; one accelerator a side
BEHAVIOUR = Behaviour(
    error_rate=0.05,
    abort_rate=0.04,
    refusal_rate=0.10,
    latency=Latency(ttft=TTFT, tpot=TPOT, tail_rate=0.04, tail_latency=TAIL_LATENCY),
    output_tokens=TOKENS,
    requests_waiting=3,
)
ANSWERED = 1 - BEHAVIOUR.error_rate - BEHAVIOUR.abort_rate
# Answers of TOKENS tokens take TTFT + 19 x TPOT = 1.25 s, refusals 0.65 s, the 4% tail 8 s.
TAIL_TPOT = (TAIL_LATENCY - TTFT) / (TOKENS - 1)
REFUSAL_TOKENS = len(REFUSAL.split())
TOKENS_PER_REQUEST = (ANSWERED - BEHAVIOUR.refusal_rate) * TOKENS + BEHAVIOUR.refusal_rate * REFUSAL_TOKENS

# Each stack's histogram buckets, in seconds: a quantile is only known to lie in the bucket that
# holds it.
Buckets = Sequence[float]
BUCKETS: dict[str, dict[str, Buckets]] = {
    "vllm": {
        "ttft": vllm.TTFT_BUCKETS,
        "tpot": vllm.INTER_TOKEN_LATENCY_BUCKETS,
        "latency": vllm.REQUEST_LATENCY_BUCKETS,
    },
    "sglang": {
        "ttft": sglang.TTFT_BUCKETS,
        "tpot": sglang.INTER_TOKEN_LATENCY_BUCKETS,
        "latency": sglang.E2E_LATENCY_BUCKETS,
    },
    "tgi": {"tpot": tgi.DURATION_BUCKETS, "latency": tgi.DURATION_BUCKETS},
    "triton": {"ttft": [ms / 1000 for ms in triton.FIRST_RESPONSE_BUCKETS_MS]},
    "llm-d": {
        "ttft": llmd.GENERAL_LATENCY_BUCKETS,
        "tpot": llmd.TPOT_BUCKETS,
        "latency": llmd.GENERAL_LATENCY_BUCKETS,
    },
    "istio": {"latency": [ms / 1000 for ms in istio.DURATION_BUCKETS_MS]},
}


def bucket_of(buckets: Buckets, seconds: float) -> tuple[float, float]:
    upper = min(b for b in buckets if b >= seconds)
    return max((b for b in buckets if b < seconds), default=0.0), upper


def slow_threshold(source: str) -> float:
    """A bucket bound above every answer but the tail's."""
    return next(b for b in BUCKETS[source]["latency"] if TTFT + (TOKENS - 1) * TPOT < b < TAIL_LATENCY)


@dataclass(frozen=True)
class Serving:
    namespace: str
    prometheus: PrometheusClient

    def context(self, source: str) -> QueryContext:
        return QueryContext.for_rollout(
            self.namespace,
            "unused",
            deployment(source),
            WINDOW,
            min_window=WINDOW,
            accelerators=(1.0, 1.0),
            prices=(PRICE, PRICE),
        )

    def measure(self, query: str) -> float | None:
        return self.prometheus.query(query).value


def deployment(source: str) -> str:
    return f"chat-{source}"


@pytest.fixture(scope="module")
def serving(local_bed: LocalCluster, api_client: client.ApiClient) -> Iterator[Serving]:
    with scratch_namespace(api_client) as namespace:
        fleet = ModelFleet(local_bed, api_client)
        try:
            for source in DOUBLED:  # all first, so that their pods become Ready together
                create(api_client, model_deployment(deployment(source), namespace, replicas=1))
            for source in DOUBLED:
                fleet.serve(namespace, deployment(source), BEHAVIOUR.model_copy(update={"source": source}))
            names = [deployment(source) for source in DOUBLED]
            create(api_client, http_route("chat", namespace, dict.fromkeys(names, 1)))
            watcher = HTTPRouteWatcher(client.CustomObjectsApi(api_client), namespace, "chat")
            driver = TrafficDriver({name: fleet.urls(name) for name in names}, rps=150)
            with BackgroundTraffic(driver, watcher):
                yield Serving(namespace, PrometheusClient(local_bed.prometheus_url, timeout=2))
        finally:
            fleet.stop()


def near(expected: float, tolerance: float) -> Callable[[float], bool]:
    return lambda value: abs(value - expected) <= tolerance


def within(bucket: tuple[float, float]) -> Callable[[float], bool]:
    lower, upper = bucket
    return lambda value: lower < value <= upper * (1 + 1e-9)


def expectation(serving: Serving, source: str, preset: str) -> Callable[[float], bool]:
    """What the double's knobs make of the preset. Shares are exact counts over the window, give or
    take the window's edges falling between scrapes."""
    buckets = BUCKETS.get(source, {})
    return {
        "errorRate": lambda: near(BEHAVIOUR.error_rate, 0.015),
        "abortRate": lambda: near(BEHAVIOUR.abort_rate, 0.015),
        "refusalRate": lambda: near(BEHAVIOUR.refusal_rate, 0.02),
        # The tail is a share of the answered requests, which the latency histograms count.
        "slowRequestRate": lambda: near(BEHAVIOUR.latency.tail_rate, 0.015),
        "ttftP50": lambda: within(bucket_of(buckets["ttft"], TTFT)),
        "ttftP99": lambda: within(bucket_of(buckets["ttft"], TTFT)),
        # 4% of answers are in the tail, nearly all of them full answers with TAIL_TPOT per token.
        "tpotP99": lambda: within(bucket_of(buckets["tpot"], TAIL_TPOT)),
        "latencyP99": lambda: within(bucket_of(buckets["latency"], TAIL_LATENCY)),
        "tokensPerSecond": lambda: tokens_per_request_near(serving, source),
        "queueDepth": lambda: near(BEHAVIOUR.requests_waiting, 0),
        "goodputPerAccelerator": lambda: near_measured(serving, first_tokens(serving, source)),
        "goodputTokensPerAccelerator": lambda: near_measured(
            serving, preset_query("tokensPerSecond", source, serving.context(source))
        ),
        "costPerMillionTokens": lambda: cost_near(serving, source),
    }[preset]()


def first_tokens(serving: Serving, source: str) -> str:
    """The candidate's requests per second that got a first token (with no incumbent traffic and one
    accelerator, the goodput when every request meets the targets)."""
    stack, ctx = STACKS[source], serving.context(source)
    assert stack.ttft is not None
    return stack.ttft.observations().over("rate", stack.select(ctx, "candidate"), ctx.interval)


def near_measured(serving: Serving, query: str, tolerance: float = 0.05) -> Callable[[float], bool]:
    def check(value: float) -> bool:
        expected = serving.measure(query)
        return bool(expected) and abs(value - expected) <= tolerance * expected

    return check


def cost_near(serving: Serving, source: str) -> Callable[[float], bool]:
    """One accelerator at PRICE an hour over the tokens of the window (a difference of two readings:
    a scrape more or less than the rate's)."""

    def check(cost: float) -> bool:
        tokens_per_second = serving.measure(preset_query("tokensPerSecond", source, serving.context(source)))
        if not tokens_per_second:
            return False
        expected = PRICE * WINDOW_SECONDS / 3600 / (tokens_per_second * WINDOW_SECONDS / 1e6)
        return abs(cost - expected) <= 0.15 * expected

    return check


def tokens_per_request_near(serving: Serving, source: str) -> Callable[[float], bool]:
    def check(tokens_per_second: float) -> bool:
        requests = serving.measure(requests_query(source, serving.context(source)))
        if not requests:
            return False
        return (
            abs(tokens_per_second * WINDOW_SECONDS / requests - TOKENS_PER_REQUEST)
            <= 0.05 * TOKENS_PER_REQUEST
        )

    return check


CASES = [(source, preset) for source in DOUBLED for preset in PRESETS]


@pytest.mark.parametrize(("source", "preset"), CASES, ids=[f"{s}-{p}" for s, p in CASES])
def test_preset_measures_the_doubles_knobs(serving: Serving, source: str, preset: str) -> None:
    ctx = serving.context(source)
    if preset not in available(source):
        with pytest.raises(UnknownPresetError, match=f"preset {preset} does not exist for source {source}"):
            preset_query(preset, source, ctx, threshold=1.0, goodput=GOODPUT)
        return
    threshold = slow_threshold(source) if preset == "slowRequestRate" else None
    query = preset_query(preset, source, ctx, threshold=threshold, goodput=GOODPUT)
    expected = expectation(serving, source, preset)
    measured: list[float | None] = []

    def matches() -> bool:
        measured.append(serving.measure(query))
        return measured[-1] is not None and expected(measured[-1])

    try:
        wait_for(matches, timeout=60, interval=1, what=f"{source} {preset} to match the knobs")
    except WaitTimeout:
        pytest.fail(
            f"{source} {preset}: the last values {measured[-5:]} do not match the knobs; query: {query}"
        )
    # The incumbent ("unused") has no series at all: no data, never a value that could pass.
    incumbent = preset_query(preset, source, ctx, "incumbent", threshold=threshold, goodput=GOODPUT)
    assert serving.measure(incumbent) is None
