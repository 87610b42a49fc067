"""A serving scenario for operator tests: two model Deployments with doubles behind an HTTPRoute,
traffic following the route, and a recorder of every weight the route ever showed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutStatus
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.manifests import (
    GATEWAY_GROUP,
    GATEWAY_VERSION,
    Manifest,
    http_route,
    model_deployment,
    model_service,
)
from testbed.model_server_double import Behaviour
from testbed.traffic_driver import BackgroundTraffic, HTTPRouteWatcher, TrafficDriver, parse_backend_weights
from testbed.waiting import wait_for
from tests.support.kube import create


@dataclass
class RouteRecorder:
    """Every (time, incumbent weight, candidate weight) the HTTPRoute showed, from a watch."""

    api: client.CustomObjectsApi
    namespace: str
    name: str
    seen: list[tuple[float, int, int]] = field(default_factory=list)
    failure: Exception | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._watch, daemon=True).start()
        wait_for(self.recorded, timeout=10, what="the route recorder's first event")

    def stop(self) -> None:
        self._stop.set()

    def recorded(self) -> list[tuple[float, int, int]]:
        """What the watch saw; raises if it died, since a dead recorder would look like a quiet route."""
        if self.failure is not None:
            raise RuntimeError(f"the route recorder's watch failed: {self.failure!r}") from self.failure
        return self.seen

    def candidate_weights(self) -> list[int]:
        """The distinct successive candidate weights, in order."""
        weights: list[int] = []
        for _, _, candidate in self.recorded():
            if not weights or weights[-1] != candidate:
                weights.append(candidate)
        return weights

    def weights_until(self, last: int) -> list[int]:
        """candidate_weights() once the route shows `last`: the watch may lag the rollout's status,
        which is written after the route."""
        wait_for(lambda: self.candidate_weights()[-1] == last, timeout=10, what=f"the route at {last}")
        return self.candidate_weights()

    def first_time_at(self, candidate_weight: int, after: float) -> float | None:
        return next((t for t, _, c in self.recorded() if c == candidate_weight and t >= after), None)

    def _watch(self) -> None:
        try:
            self._record()
        except Exception as error:  # handed to the test thread by recorded()
            self.failure = error

    def _record(self) -> None:
        while not self._stop.is_set():
            stream = watch.Watch().stream(
                self.api.list_namespaced_custom_object,
                GATEWAY_GROUP,
                GATEWAY_VERSION,
                self.namespace,
                "httproutes",
                field_selector=f"metadata.name={self.name}",
                timeout_seconds=5,
            )
            for event in stream:
                weights = parse_backend_weights(event["object"])
                self.seen.append((time.time(), weights["chat-v1"], weights["chat-v2"]))


@dataclass
class Rollouts:
    """The ModelRollouts of one namespace: create them, read and wait for their status."""

    api_client: client.ApiClient
    namespace: str

    def apply(self, manifest: Manifest) -> None:
        create(self.api_client, manifest)

    def rollout(self, name: str = "chat") -> dict[str, Any]:
        body: dict[str, Any] = client.CustomObjectsApi(self.api_client).get_namespaced_custom_object(
            API_GROUP, API_VERSION, self.namespace, PLURAL, name
        )
        return body

    def status(self, name: str = "chat") -> ModelRolloutStatus:
        return ModelRolloutStatus.model_validate(self.rollout(name).get("status") or {})

    def wait_for_status(
        self, what: str, predicate: Any, timeout: float = 90, name: str = "chat"
    ) -> ModelRolloutStatus:
        def probe() -> ModelRolloutStatus | None:
            status = self.status(name)
            return status if predicate(status) else None

        try:
            return wait_for(probe, timeout=timeout, interval=0.05, what=what)
        except TimeoutError as error:
            raise AssertionError(
                f"{error}; last status: {self.status(name).model_dump_json(indent=1)}"
            ) from None


@dataclass
class Scenario(Rollouts):
    fleet: ModelFleet
    recorder: RouteRecorder


@contextmanager
def serving(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    candidate: Behaviour,
    *,
    rps: float = 50,
    incumbent: Behaviour | None = None,
) -> Iterator[Scenario]:
    """chat-v1 (the incumbent) takes all traffic through HTTPRoute `chat`; chat-v2 is ready."""
    fleet = ModelFleet(bed, api_client)
    for name in ("chat-v1", "chat-v2"):
        create(api_client, model_deployment(name, namespace, replicas=2))
        create(api_client, model_service(name, namespace))
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    fleet.serve(namespace, "chat-v1", incumbent or Behaviour())
    fleet.serve(namespace, "chat-v2", candidate)
    objects = client.CustomObjectsApi(api_client)
    recorder = RouteRecorder(objects, namespace, "chat")
    recorder.start()
    targets = {name: fleet.urls(name) for name in ("chat-v1", "chat-v2")}
    traffic = BackgroundTraffic(TrafficDriver(targets, rps=rps), HTTPRouteWatcher(objects, namespace, "chat"))
    try:
        with traffic:
            yield Scenario(api_client, namespace, fleet, recorder)
    finally:
        recorder.stop()
        fleet.stop()
