"""Many rollouts' objects in one namespace, made cheaply: per rollout an HTTPRoute and two model
Deployments of one replica on kwok's fake nodes, and its candidate's request counters from one
synthetic scrape target (testbed/pod_series.py). Every route sends traffic to one shared pair of
Services; the metrics still differ per rollout, since the queries select each candidate's Pods."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config

from testbed.localcluster import LocalCluster, fake_node
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION, http_route, model_deployment, model_service
from testbed.pod_series import PodSeries, PodTraffic
from testbed.waiting import wait_for

INCUMBENT_SERVICE, CANDIDATE_SERVICE = "chat-v1", "chat-v2"
PODS_PER_NODE = 500
CREATORS = 8  # requests the bench sends at once while building the fleet
SCRAPE_TARGET = "bench.pod-series"
REQUESTS_PER_SECOND = 5.0  # per candidate Pod: 50 requests per 10 s interval, above minRequests
BREACH_ERROR_SHARE = 0.5


def bench_api_client(kubeconfig: Path) -> client.ApiClient:
    """A client whose connection pool serves CREATORS threads (the default keeps 4)."""
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
    configuration.connection_pool_maxsize = CREATORS * 2
    return client.ApiClient(configuration)


def route_name(index: int) -> str:
    return f"r{index}"


def candidate_name(index: int) -> str:
    return f"r{index}-v2"


def incumbent_name(index: int) -> str:
    return f"r{index}-v1"


@dataclass
class ScaleFleet:
    bed: LocalCluster
    api_client: client.ApiClient
    namespace: str
    size: int
    breaching: Callable[[int], bool]

    def __post_init__(self) -> None:
        self.series = PodSeries()
        self.nodes = [f"bench-node-{k}" for k in range(math.ceil(2 * self.size / PODS_PER_NODE))]

    def build(self) -> None:
        core = client.CoreV1Api(self.api_client)
        apps = client.AppsV1Api(self.api_client)
        for node in self.nodes:
            core.create_node(fake_node(node, pods=PODS_PER_NODE))
        for service in (INCUMBENT_SERVICE, CANDIDATE_SERVICE):
            core.create_namespaced_service(self.namespace, model_service(service, self.namespace))
        deployments = [
            model_deployment(name(i), self.namespace, replicas=1)
            for i in range(self.size)
            for name in (incumbent_name, candidate_name)
        ]
        _concurrently(lambda d: apps.create_namespaced_deployment(self.namespace, d), deployments)
        _concurrently(self._create_route, range(self.size))
        self.series.add(
            [
                PodTraffic(
                    self.namespace,
                    f"{candidate_name(i)}-bench-0",  # matches the default pod regex of the candidate
                    REQUESTS_PER_SECOND,
                    BREACH_ERROR_SHARE if self.breaching(i) else 0.0,
                )
                for i in range(self.size)
            ]
        )
        self.bed.scrape_targets.add(SCRAPE_TARGET, self.series.serve(), {"job": "pod-series"})
        wait_for(
            self._all_available,
            timeout=60 + self.size,
            interval=2,
            what=f"{2 * self.size} model Deployments to be Available",
        )

    def reset_routes(self, count: int) -> None:
        """Every route of the first `count` rollouts back to the incumbent only."""
        objects = client.CustomObjectsApi(self.api_client)

        def reset(index: int) -> None:
            spec = self._route(index)["spec"]
            objects.patch_namespaced_custom_object(
                GATEWAY_GROUP,
                GATEWAY_VERSION,
                self.namespace,
                "httproutes",
                route_name(index),
                {"spec": spec},
            )

        _concurrently(reset, range(count))

    def tear_down(self) -> None:
        self.bed.scrape_targets.remove(SCRAPE_TARGET)
        self.series.stop()
        core = client.CoreV1Api(self.api_client)
        for node in self.nodes:
            core.delete_node(node)

    def _route(self, index: int) -> dict[str, Any]:
        weights = {INCUMBENT_SERVICE: 100, CANDIDATE_SERVICE: 0}
        return http_route(route_name(index), self.namespace, weights)

    def _create_route(self, index: int) -> None:
        client.CustomObjectsApi(self.api_client).create_namespaced_custom_object(
            GATEWAY_GROUP, GATEWAY_VERSION, self.namespace, "httproutes", self._route(index)
        )

    def _all_available(self) -> bool:
        listed: Any = client.AppsV1Api(self.api_client).list_namespaced_deployment(self.namespace)
        available = sum(
            1
            for d in listed.items
            if any(c.type == "Available" and c.status == "True" for c in d.status.conditions or [])
            and (d.status.available_replicas or 0) >= 1
        )
        return available == 2 * self.size


def _concurrently(action: Callable[[Any], object], items: Iterable[Any]) -> None:
    with ThreadPoolExecutor(CREATORS) as pool:
        for _ in pool.map(action, items):  # re-raises the first failure
            pass
