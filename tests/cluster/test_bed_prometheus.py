"""The bed's Prometheus scrapes the model-server doubles standing in for real Pods, and what it
measures through modelgate's presets matches the configured behaviour; the traffic driver splits
requests by the HTTPRoute's live weights."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from kubernetes import client

from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import preset_query
from modelgate.metrics.prometheus import PrometheusClient
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.manifests import http_route, model_deployment
from testbed.model_server_double import Behaviour, Latency
from testbed.traffic_driver import BackgroundTraffic, HTTPRouteWatcher, TrafficDriver
from testbed.waiting import wait_for
from tests.support.kube import create, set_route_weights

# Short windows: the doubles' behaviour is constant, and the test should not wait a minute.
WINDOW = "10s"


@pytest.fixture
def fleet(local_bed: LocalCluster, api_client: client.ApiClient) -> Iterator[ModelFleet]:
    serving = ModelFleet(local_bed, api_client)
    yield serving
    serving.stop()


def deploy(
    api_client: client.ApiClient, fleet: ModelFleet, namespace: str, name: str, behaviour: Behaviour
) -> None:
    create(api_client, model_deployment(name, namespace, replicas=2))
    fleet.serve(namespace, name, behaviour)


def traffic(api_client: client.ApiClient, fleet: ModelFleet, namespace: str, route: str) -> BackgroundTraffic:
    targets = {name: fleet.urls(name) for name in ("chat-v1", "chat-v2")}
    watcher = HTTPRouteWatcher(client.CustomObjectsApi(api_client), namespace, route)
    return BackgroundTraffic(TrafficDriver(targets, rps=100), watcher)


def measured(prometheus: PrometheusClient, promql: str) -> float | None:
    return prometheus.query(promql).value


def test_presets_measure_the_configured_error_latency_and_refusal_rates(
    local_bed: LocalCluster, api_client: client.ApiClient, fleet: ModelFleet, namespace: str
) -> None:
    behaviour = Behaviour(
        error_rate=0.05, refusal_rate=0.10, latency=Latency(median=0.2, tail_rate=0.03, tail_latency=8.0)
    )
    deploy(api_client, fleet, namespace, "chat-v1", Behaviour())
    deploy(api_client, fleet, namespace, "chat-v2", behaviour)
    create(api_client, http_route("chat", namespace, {"chat-v1": 0, "chat-v2": 100}))
    ctx = QueryContext.for_rollout(namespace, "chat-v1", "chat-v2", WINDOW, min_window=WINDOW)
    prometheus = PrometheusClient(local_bed.prometheus_url, timeout=2)
    with traffic(api_client, fleet, namespace, "chat"):
        # Tolerances: deterministic outcomes, but a 10 s window holds about 1000 requests and its
        # edges fall between scrapes; the P99 comes from vLLM's buckets, so it is only known to
        # lie in the bucket that holds the 3% tail, (5 s, 10 s].
        def close_to_configured() -> bool:
            error_rate = measured(prometheus, preset_query("errorRate", ctx))
            refusal_rate = measured(prometheus, preset_query("refusalRate", ctx))
            p99 = measured(prometheus, preset_query("latencyP99", ctx))
            return (
                error_rate is not None
                and abs(error_rate - 0.05) <= 0.01
                and refusal_rate is not None
                and abs(refusal_rate - 0.10) <= 0.015
                and p99 is not None
                and 5.0 < p99 <= 10.0
            )

        wait_for(
            close_to_configured, timeout=60, interval=1, what="Prometheus to measure the configured rates"
        )
        incumbent_errors = measured(prometheus, preset_query("errorRate", ctx, side="incumbent"))
        assert incumbent_errors is None or math.isnan(incumbent_errors)  # no traffic: no data


def test_route_weight_change_changes_the_measured_split(
    local_bed: LocalCluster, api_client: client.ApiClient, fleet: ModelFleet, namespace: str
) -> None:
    deploy(api_client, fleet, namespace, "chat-v1", Behaviour())
    deploy(api_client, fleet, namespace, "chat-v2", Behaviour())
    create(api_client, http_route("chat", namespace, {"chat-v1": 90, "chat-v2": 10}))
    prometheus = PrometheusClient(local_bed.prometheus_url, timeout=2)
    share = (
        f'sum(rate(http_requests_total{{namespace="{namespace}",deployment="chat-v2"}}[5s]))'
        f' / sum(rate(http_requests_total{{namespace="{namespace}"}}[5s]))'
    )

    def candidate_share_near(expected: float) -> bool:
        value = measured(prometheus, share)
        return value is not None and abs(value - expected) <= 0.03

    with traffic(api_client, fleet, namespace, "chat"):
        wait_for(lambda: candidate_share_near(0.10), timeout=60, interval=1, what="a 90/10 split")
        set_route_weights(api_client, namespace, "chat", {"chat-v1": 40, "chat-v2": 60})
        wait_for(
            lambda: candidate_share_near(0.60), timeout=60, interval=1, what="a 40/60 split after the patch"
        )
