"""The bed's Prometheus scrapes the model-server doubles standing in for real Pods, and the traffic
driver splits requests by the HTTPRoute's live weights. (What the presets measure against the
doubles, for every source: test_presets_by_source.py.) In `make bench` (12 s of a worker): `make test`
sees traffic follow the routes in test_router_rollouts.py, and the doubles scraped in every
judgement."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.manifests import http_route, model_deployment
from testbed.model_server_double import Behaviour
from testbed.traffic_driver import BackgroundTraffic, HTTPRouteWatcher, TrafficDriver
from testbed.waiting import wait_for
from tests.support.kube import create, set_route_weights

pytestmark = pytest.mark.bench


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
