"""A serving scenario for operator tests: two model Deployments with doubles behind an HTTPRoute,
traffic following the route, and a recorder of every weight the route ever showed.

Our doubles, not llm-d's vLLM simulator (tests/support/simulated.py): these tests set what a model
does per test and change it mid-test (`Behaviour`: error, abort and refusal shares, latency tails),
read exemplars and per-request traces, and export other stacks' series, none of which the
simulator can; and the traffic driver starts in milliseconds where a gateway takes seconds."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubernetes import client, watch

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutStatus, Phase
from testbed.fleet import ModelFleet
from testbed.inference_pools import inference_pool, pool_http_route, pool_targets
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

ObjectHandler = Callable[[float, dict[str, Any]], None]
DEPLOYMENTS = ("chat-v1", "chat-v2")
POOLS = ("pool-v1", "pool-v2")  # named apart from the Deployments: they select the Pods by label


@dataclass
class Watcher:
    """Hands every object a watch of one kind in a namespace sees to `on_object`, with the time, from
    a daemon thread. The watch is re-opened when it breaks (an API server restart), and the list it
    starts with hands over the state it missed meanwhile."""

    api: client.CustomObjectsApi
    namespace: str
    kind: tuple[str, str, str]  # group, version, plural
    on_object: ObjectHandler
    field_selector: str | None = None
    failure: Exception | None = None
    # How long the watch may fail to re-open before check() calls it dead: an API server restart
    # refuses connections for seconds.
    grace: float = 60.0
    _failing_since: float | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        threading.Thread(target=self._watch, daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def check(self) -> None:
        """Raises if the watch has been broken for longer than `grace`: a dead watch would look like a
        quiet object."""
        failing_since = self._failing_since
        if (
            self.failure is not None
            and failing_since is not None
            and time.monotonic() - failing_since > self.grace
        ):
            raise RuntimeError(f"the {self.kind[2]} watch failed: {self.failure!r}") from self.failure

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                stream = watch.Watch().stream(
                    self.api.list_namespaced_custom_object,
                    *self.kind[:2],
                    self.namespace,
                    self.kind[2],
                    field_selector=self.field_selector,
                    timeout_seconds=5,
                )
                for event in stream:
                    self._healthy()
                    self.on_object(time.time(), event["object"])
                self._healthy()  # the server answered and ended the stream at its timeout
            except Exception as error:  # handed to the test thread by check(); re-opened meanwhile
                self.failure = error
                if self._failing_since is None:
                    self._failing_since = time.monotonic()
                self._stop.wait(0.2)

    def _healthy(self) -> None:
        self.failure = None
        self._failing_since = None


@dataclass
class RouteRecorder:
    """Every (time, incumbent weight, candidate weight) the HTTPRoute showed, from a watch."""

    api: client.CustomObjectsApi
    namespace: str
    name: str
    seen: list[tuple[float, int, int]] = field(default_factory=list)
    backends: tuple[str, str] = ("chat-v1", "chat-v2")  # the incumbent's and the candidate's

    def __post_init__(self) -> None:
        kind = (GATEWAY_GROUP, GATEWAY_VERSION, "httproutes")
        self._watcher = Watcher(self.api, self.namespace, kind, self._record, f"metadata.name={self.name}")

    def start(self) -> None:
        self._watcher.start()
        wait_for(lambda: bool(self.recorded()), timeout=10, what="the route recorder's first event")

    def stop(self) -> None:
        self._watcher.stop()

    def _record(self, at: float, route: dict[str, Any]) -> None:
        weights = parse_backend_weights(route)
        incumbent, candidate = self.backends
        self.seen.append((at, weights[incumbent], weights[candidate]))

    def recorded(self) -> list[tuple[float, int, int]]:
        self._watcher.check()
        return self.seen

    def weight_changes(self) -> list[tuple[float, int]]:
        """(time, candidate weight) of the first weight seen and of each change: a re-opened watch
        repeats the weight it finds, and the gateway's status updates repeat it too, which is no
        change."""
        changes: list[tuple[float, int]] = []
        for at, _, candidate in self.recorded():
            if not changes or changes[-1][1] != candidate:
                changes.append((at, candidate))
        return changes

    def candidate_weights(self, after: float = 0) -> list[int]:
        """The distinct successive candidate weights, in order (only the changes seen from `after` on,
        when given)."""
        return [candidate for at, candidate in self.weight_changes() if at >= after]

    def weights_until(self, last: int) -> list[int]:
        """candidate_weights() once the route shows `last`: the watch may lag the rollout's status,
        and the operator writes a step's status before its weight."""
        wait_for(lambda: self.candidate_weights()[-1] == last, timeout=10, what=f"the route at {last}")
        return self.candidate_weights()

    def first_time_at(self, candidate_weight: int, after: float) -> float | None:
        return next((t for t, _, c in self.recorded() if c == candidate_weight and t >= after), None)


@dataclass
class StepRecorder:
    """When each ModelRollout of a namespace started each of its steps, as its status said."""

    api: client.CustomObjectsApi
    namespace: str
    started: dict[tuple[str, int], datetime] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._watcher = Watcher(self.api, self.namespace, (API_GROUP, API_VERSION, PLURAL), self._record)

    def start(self) -> None:
        self._watcher.start()

    def stop(self) -> None:
        self._watcher.stop()

    def _record(self, _: float, rollout: dict[str, Any]) -> None:
        status = ModelRolloutStatus.model_validate(rollout.get("status") or {})
        if status.step_started_at is not None:
            self.started[(rollout["metadata"]["name"], status.current_step_index)] = status.step_started_at

    def step_started_at(self, rollout: str, index: int) -> datetime | None:
        self._watcher.check()
        return self.started.get((rollout, index))


def settled(*phases: Phase) -> Callable[[ModelRolloutStatus], bool]:
    """In one of `phases`, with the route carrying the weight status asks for. The operator writes a
    step's status before its weight (a rollback's weight first), so a phase shows a moment before the
    route does."""
    return lambda status: status.phase in phases and status.live_weight == status.current_weight


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
    traffic: BackgroundTraffic


@contextmanager
def serving(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    candidate: Behaviour,
    *,
    rps: float = 50,
    incumbent: Behaviour | None = None,
    inference_pools: bool = False,
    refusal_sidecar: bool = True,
    later: Mapping[str, Behaviour] | None = None,
) -> Iterator[Scenario]:
    """chat-v1 (the incumbent) takes all traffic through HTTPRoute `chat`; chat-v2 is ready. Each is
    reached through a Service of its name or, with `inference_pools`, through the InferencePool
    `POOLS[i]` that selects its Pods. Without `refusal_sidecar`, nothing exports the refusal
    sidecar's series. `later`: more Deployments served so (at weight 0, by Service), for a later
    spec.candidate of the same ModelRollout."""
    fleet = ModelFleet(bed, api_client, refusal_counters=refusal_sidecar)
    later = later or {}
    deployments = (*DEPLOYMENTS, *later)
    backends = POOLS if inference_pools else deployments
    for name, backend in zip(deployments, backends, strict=True):
        create(api_client, model_deployment(name, namespace, replicas=2))
        if inference_pools:
            create(api_client, inference_pool(backend, namespace, {"app.kubernetes.io/name": name}))
        else:
            create(api_client, model_service(name, namespace))
    route = pool_http_route if inference_pools else http_route
    create(api_client, route("chat", namespace, {b: 100 if i == 0 else 0 for i, b in enumerate(backends)}))
    fleet.serve(namespace, "chat-v1", incumbent or Behaviour())
    fleet.serve(namespace, "chat-v2", candidate)
    for name, behaviour in later.items():
        fleet.serve(namespace, name, behaviour)
    objects = client.CustomObjectsApi(api_client)
    recorder = RouteRecorder(objects, namespace, "chat", backends=(backends[0], backends[1]))
    recorder.start()
    if inference_pools:
        targets = pool_targets(api_client, namespace, POOLS, {d.pod: d.url for d in fleet.doubles})
    else:
        targets = {name: fleet.urls(name) for name in deployments}
    traffic = BackgroundTraffic(TrafficDriver(targets, rps=rps), HTTPRouteWatcher(objects, namespace, "chat"))
    try:
        with traffic:
            yield Scenario(api_client, namespace, fleet, recorder, traffic)
    finally:
        recorder.stop()
        fleet.stop()
