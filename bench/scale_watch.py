"""What the benchmark sees of many rollouts, from two namespace-wide watches: every status each
ModelRollout showed (its steps' start times, its end, its rollback reason) and every weight each
HTTPRoute showed, with the time the watch received it."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from bench.scale_fleet import CANDIDATE_SERVICE
from modelgate import API_GROUP, API_VERSION, PLURAL
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION
from testbed.traffic_driver import parse_backend_weights

TERMINAL = frozenset({"Succeeded", "RolledBack", "Failed"})
GONE = 410
# How long one watch request stays open: a stopped watch ends within it. An API server being
# stopped waits for open watches (with 30 s, the bed's kube-apiserver outwaited its 15 s SIGTERM
# deadline and was killed).
WATCH_SECONDS = 5


def _seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


class NamespaceWatch:
    """Lists, then watches one custom resource in a namespace, handing every object to `seen` with
    the time it arrived; relists when the API server has compacted past the watch's version."""

    def __init__(
        self,
        api_client: client.ApiClient,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        seen: Callable[[float, Mapping[str, Any]], None],
    ) -> None:
        self.objects = client.CustomObjectsApi(api_client)
        self.where = (group, version, namespace, plural)
        self.seen = seen
        self.failure: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Returns once the watch request is closed."""
        self._stop.set()
        self._thread.join(timeout=3 * WATCH_SECONDS)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._watch_from(self._list())
        except Exception as error:  # reported by check()
            self.failure = error

    def check(self) -> None:
        if self.failure is not None:
            raise RuntimeError(f"a benchmark watch failed: {self.failure!r}") from self.failure

    def _list(self) -> str:
        listed = self.objects.list_namespaced_custom_object(*self.where)
        now = time.time()
        for item in listed["items"]:
            self.seen(now, item)
        return str(listed["metadata"]["resourceVersion"])

    def _watch_from(self, version: str) -> None:
        while not self._stop.is_set():
            stream = watch.Watch().stream(
                self.objects.list_namespaced_custom_object,
                *self.where,
                resource_version=version,
                timeout_seconds=WATCH_SECONDS,
            )
            try:
                for event in stream:
                    if event["type"] == "ERROR":
                        return  # e.g. 410 Gone: relist
                    obj = event["object"]
                    version = str(obj["metadata"]["resourceVersion"])
                    if event["type"] != "DELETED":
                        self.seen(time.time(), obj)
            except ApiException as error:
                if error.status == GONE:
                    return
                raise


@dataclass
class RolloutRecord:
    step_starts: dict[int, float] = field(default_factory=dict)  # step index -> stepStartedAt
    phase: str | None = None
    ended_seen_at: float | None = None  # when the watch first saw a terminal phase
    rollback_at: float | None = None  # status.rollbackReason.time


@dataclass
class Recorder:
    """The statuses of the rollouts and the candidate weights of the routes, as watched."""

    rollouts: dict[str, RolloutRecord] = field(default_factory=lambda: defaultdict(RolloutRecord))
    weights: dict[str, list[tuple[float, int]]] = field(default_factory=lambda: defaultdict(list))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def rollout_seen(self, at: float, body: Mapping[str, Any]) -> None:
        status = body.get("status") or {}
        with self._lock:
            record = self.rollouts[body["metadata"]["name"]]
            started = status.get("stepStartedAt")
            if started is not None:
                record.step_starts.setdefault(int(status.get("currentStepIndex", 0)), _seconds(started))
            record.phase = status.get("phase")
            if record.phase in TERMINAL and record.ended_seen_at is None:
                record.ended_seen_at = at
            reason = status.get("rollbackReason")
            if reason is not None:
                record.rollback_at = _seconds(reason["time"])

    def route_seen(self, at: float, body: Mapping[str, Any]) -> None:
        weight = parse_backend_weights(body)[CANDIDATE_SERVICE]
        with self._lock:
            history = self.weights[body["metadata"]["name"]]
            if not history or history[-1][1] != weight:
                history.append((at, weight))

    def ended(self, names: list[str]) -> int:
        with self._lock:
            return sum(1 for name in names if self.rollouts[name].phase in TERMINAL)

    def back_at_zero(self, route: str, after: float) -> float | None:
        """When the route's candidate weight was first seen at 0 after having been above 0 and at or
        after `after`."""
        with self._lock:
            history = list(self.weights[route])
        raised = False
        for at, weight in history:
            raised = raised or weight > 0
            if raised and weight == 0 and at >= after:
                return at
        return None

    def watches(self, api_client: client.ApiClient, namespace: str) -> list[NamespaceWatch]:
        return [
            NamespaceWatch(api_client, API_GROUP, API_VERSION, namespace, PLURAL, self.rollout_seen),
            NamespaceWatch(
                api_client, GATEWAY_GROUP, GATEWAY_VERSION, namespace, "httproutes", self.route_seen
            ),
        ]
