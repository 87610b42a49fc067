"""The reconciler holds a status change that may wait (core.may_hold) in memory and writes it with
the next one that may not; it starts a tick from the held status only while the stored status is the
one it held it against, and a restarted operator starts from what is stored."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest

from modelgate.api import Phase, parse_status
from modelgate.core import AnalysisRun, MetricQuery, QueryResult
from modelgate.core.stepping import MAX_STATUS_HOLD
from modelgate.kube import Kube
from modelgate.reconciler import Reconciler
from testbed.manifests import http_route, model_rollout
from tests.unit.test_reconciler_write_order import NOW, InMemoryKube

STEPS = [{"setWeight": 10}, {"pause": {"duration": "1m"}}, {"setWeight": 50}]
INTERVAL = timedelta(seconds=10)


class PassingProvider:
    def plan(self, spec: Any, namespace: str) -> object:
        return SimpleNamespace(unbuildable={})  # every query built

    def run(self, plan: object, at: datetime) -> AnalysisRun:
        return AnalysisRun(at, QueryResult(100.0), {"error-rate": MetricQuery("q", QueryResult(0.0))})


class Rollout:
    """One rollout over an in-memory API, ticked by a reconciler (a new one stands for a restart)."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        steps: list[dict[str, Any]] = STEPS,
        status_hold: timedelta = MAX_STATUS_HOLD,
    ) -> None:
        rollout = model_rollout(
            "chat",
            "serving",
            steps=steps,
            prometheus="http://prometheus:9090",
            metrics=[{"name": "error-rate", "preset": "errorRate", "max": 0.01}],
            interval="10s",
        )
        rollout["metadata"].update(generation=1, resourceVersion="7", uid="u1")
        route = http_route("chat", "serving", {"chat-v1": 100, "chat-v2": 0})
        route["metadata"]["resourceVersion"] = "3"
        self.kube = InMemoryKube(rollout, route)
        self.monkeypatch = monkeypatch
        self.status_hold = status_hold
        self.now = NOW
        self.restart()

    def restart(self) -> None:
        self.reconciler = Reconciler(
            cast(Kube, self.kube), clock=lambda: self.now, status_hold=self.status_hold
        )
        self.monkeypatch.setattr(self.reconciler.providers, "for_analysis", lambda _: PassingProvider())

    def tick(self, after: timedelta = INTERVAL) -> list[tuple[str, int]]:
        """The writes of one tick `after` the previous one."""
        return self.tick_and_wake(after)[0]

    def tick_and_wake(self, after: timedelta) -> tuple[list[tuple[str, int]], timedelta]:
        """The writes of one tick `after` the previous one, and when it asks to tick again."""
        self.now += after
        before = len(self.kube.writes)
        result = self.reconciler.tick(copy.deepcopy(self.kube.rollout))
        return self.kube.writes[before:], result.wake_after

    @property
    def stored(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.kube.rollout["status"])


def in_the_pause(monkeypatch: pytest.MonkeyPatch) -> Rollout:
    rollout = Rollout(monkeypatch)
    assert rollout.tick(timedelta()) == [("status", 10), ("route", 10)]  # the verified weight is held
    assert rollout.stored["liveWeight"] == 0
    rollout.tick()  # the first analysis completes the weight step: written, with the held liveWeight
    assert (rollout.stored["currentStepIndex"], rollout.stored["liveWeight"]) == (1, 10)
    return rollout


def test_an_evaluation_that_changes_no_verdict_waits_for_the_next_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rollout = in_the_pause(monkeypatch)
    written_at = rollout.stored["lastAnalysisAt"]
    held = [rollout.tick() for _ in range(3)]  # 10, 20 and 30 s after the last write
    assert held == [[], [], []]
    assert rollout.stored["lastAnalysisAt"] == written_at
    # Held since the first of them: written once it has waited MAX_STATUS_HOLD (30 s).
    assert rollout.tick() == [("status", 10)]
    assert parse_status(rollout.stored).last_analysis_at == rollout.now


def test_a_restarted_operator_starts_from_the_stored_status_and_evaluates_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rollout = in_the_pause(monkeypatch)
    assert rollout.tick() == []
    rollout.restart()  # the held evaluation is lost
    # Its evaluation is due at once, counted from the stored lastAnalysisAt.
    assert rollout.tick(timedelta(seconds=1)) == []
    assert parse_status(rollout.stored).last_analysis_at == rollout.now - INTERVAL - timedelta(seconds=1)
    assert rollout.reconciler._held[("serving", "chat")].status.last_analysis_at == rollout.now


def test_a_status_someone_else_wrote_replaces_the_held_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rollout = in_the_pause(monkeypatch)
    assert rollout.tick() == []
    rollout.kube.rollout["status"] = {**rollout.stored, "message": "edited by hand"}
    rollout.tick()
    assert rollout.stored["message"] != "edited by hand"  # the engine's own message, written at once


# The scale bench's rollout (bench/test_scale.py).
BENCH_STEPS = [
    {"setWeight": 10},
    {"pause": {"duration": "20s"}},
    {"setWeight": 50},
    {"pause": {"duration": "20s"}},
]


def writes_over_the_bench_rollout(monkeypatch: pytest.MonkeyPatch, status_hold: timedelta) -> list[str]:
    rollout = Rollout(monkeypatch, BENCH_STEPS, status_hold)
    writes, wake = rollout.tick_and_wake(timedelta())
    while rollout.stored.get("phase") != Phase.SUCCEEDED:
        assert rollout.now < NOW + timedelta(minutes=2), rollout.stored
        tick_writes, wake = rollout.tick_and_wake(wake)
        writes += tick_writes
    return [kind for kind, _ in writes]


def test_the_bench_rollout_writes_its_status_6_times_instead_of_10(monkeypatch: pytest.MonkeyPatch) -> None:
    held = writes_over_the_bench_rollout(monkeypatch, MAX_STATUS_HOLD)
    every = writes_over_the_bench_rollout(monkeypatch, timedelta())
    assert (held.count("status"), held.count("route")) == (6, 3)
    assert (every.count("status"), every.count("route")) == (10, 3)
