"""The per-rollout loops: a tick runs when it is due, counted from the end of the previous one, and
how long it waited for the event loop and a worker thread is recorded; a stuck tick is logged with
its thread's stack, and a loop that ended is started again by the rollout's next event."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from structlog.testing import capture_logs

from modelgate import observability
from modelgate.api import parse_spec
from modelgate.reconciler import RolloutGone, TickResult
from modelgate.rollout_loops import RolloutLoops
from testbed.manifests import model_rollout

WAKE_AFTER = timedelta(milliseconds=30)
TICKS = 4


class FakeReconciler:
    """What the loops call on a reconciler besides the tick: forgetting a deleted rollout."""

    def __init__(self) -> None:
        self.forgotten: list[tuple[str, str]] = []

    def forget(self, namespace: str, name: str) -> None:
        self.forgotten.append((namespace, name))


class CountingReconciler(FakeReconciler):
    """Ticks `TICKS` times, recording when each started and ended, then reports the rollout gone."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: list[tuple[float, float]] = []

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        if len(self.spans) == TICKS:
            raise RolloutGone(name)
        started = time.monotonic()
        time.sleep(0.005)  # the tick's own work
        self.spans.append((started, time.monotonic()))
        return TickResult(None, WAKE_AFTER)


def _rollout(name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": name, "generation": 1}, "spec": {}}


def _waits_recorded() -> float:
    return next(
        sample.value
        for metric in observability.TICK_WAIT_SECONDS.collect()
        for sample in metric.samples
        if sample.name.endswith("_count")
    )


def test_each_tick_is_due_one_wake_up_after_the_previous_one_ended_and_its_wait_is_recorded() -> None:
    reconciler = CountingReconciler()
    loops = RolloutLoops(reconciler)  # type: ignore[arg-type]
    recorded_before = _waits_recorded()

    async def run() -> None:
        loops.notice("ADDED", _rollout("chat"))
        task = loops._loops["ns", "chat"].task
        assert task is not None
        await asyncio.wait_for(task, timeout=30)

    asyncio.run(run())
    assert len(reconciler.spans) == TICKS
    for (_, previous_end), (start, _) in zip(reconciler.spans, reconciler.spans[1:], strict=False):
        assert start - previous_end >= WAKE_AFTER.total_seconds()
    # every tick that ran, and the one that found the rollout gone
    assert _waits_recorded() - recorded_before == TICKS + 1


class FinishedReconciler(FakeReconciler):
    """A finished rollout: its tick asks to sleep an hour; the next one reports the rollout gone."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[float] = []
        self.first_ended = 0.0
        self.ticked = threading.Event()

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        self.starts.append(time.monotonic())
        if len(self.starts) == 2:
            raise RolloutGone(name)
        self.first_ended = time.monotonic()
        self.ticked.set()
        return TickResult(None, timedelta(hours=1))


def _tick_then_wake(
    loops: RolloutLoops, reconciler: FinishedReconciler, spec: dict[str, Any], wake: Callable[[], None]
) -> None:
    """Starts the rollout's loop and, once its first tick asked to sleep an hour, calls `wake`; returns
    when the second tick has run."""
    body = _rollout("chat")
    body["spec"] = spec

    async def run() -> None:
        loops.notice("ADDED", body)
        task = loops._loops["ns", "chat"].task
        assert task is not None
        assert await asyncio.to_thread(reconciler.ticked.wait, 30)
        wake()
        await asyncio.wait_for(task, timeout=30)  # not the hour the tick asked for

    asyncio.run(run())


def test_a_route_change_wakes_its_rollout_no_sooner_than_the_recheck_after_its_last_tick() -> None:
    reconciler = FinishedReconciler()
    recheck = timedelta(milliseconds=300)
    loops = RolloutLoops(reconciler, route_recheck=recheck)  # type: ignore[arg-type]
    gateway = {"httpRoute": "chat-route", "incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}
    spec = {"trafficRouting": {"gatewayAPI": gateway}}

    def wake() -> None:
        loops.notice_route("grpcroutes", "ns", "chat-route")  # another kind, same name: not its route
        loops.notice_route("httproutes", "ns", "chat-route")

    _tick_then_wake(loops, reconciler, spec, wake)
    assert reconciler.starts[1] - reconciler.first_ended >= recheck.total_seconds()


def test_a_change_of_the_candidates_inference_pool_wakes_its_rollout_at_once() -> None:
    reconciler = FinishedReconciler()
    loops = RolloutLoops(reconciler, route_recheck=timedelta(hours=1))  # type: ignore[arg-type]
    spec = {"candidate": {"inferencePool": "pool-v2"}}
    _tick_then_wake(loops, reconciler, spec, lambda: loops.notice_candidate("ns", "pool-v2"))
    assert len(reconciler.starts) == 2


def test_a_change_of_the_policy_it_names_wakes_its_rollout_at_once() -> None:
    """A cluster policy's event has no namespace: it wakes the rollouts naming it in any namespace."""
    reconciler = FinishedReconciler()
    loops = RolloutLoops(reconciler, route_recheck=timedelta(hours=1))  # type: ignore[arg-type]
    spec = {"policyRef": {"kind": "ClusterModelRolloutPolicy", "name": "vllm-gateway"}}

    def wake() -> None:
        loops.notice_policy("ModelRolloutPolicy", "ns", "vllm-gateway")  # another kind: not its policy
        loops.notice_policy("ClusterModelRolloutPolicy", None, "vllm-gateway")

    _tick_then_wake(loops, reconciler, spec, wake)


@pytest.mark.parametrize("changed", ["incumbent", "generated candidate"])
def test_a_change_of_a_one_edit_rollouts_incumbent_or_generated_candidate_wakes_it_at_once(
    changed: str,
) -> None:
    reconciler = FinishedReconciler()
    loops = RolloutLoops(reconciler, route_recheck=timedelta(hours=1))  # type: ignore[arg-type]
    spec = {
        "incumbent": {"deployment": "chat-v1"},
        "candidatePatch": {"image": "vllm:2"},
        "trafficRouting": {"gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1"}},
    }
    name = (
        "chat-v1"
        if changed == "incumbent"
        else parse_spec({**spec, "steps": [{"setWeight": 5}]}).candidate.name
    )
    _tick_then_wake(loops, reconciler, spec, lambda: loops.notice_candidate("ns", name))
    assert len(reconciler.starts) == 2


class StuckReconciler(FakeReconciler):
    """Its first tick blocks until the test releases it, as a call without a timeout would."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        self.release.wait(timeout=60)
        raise RolloutGone(name)


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def test_a_tick_that_runs_too_long_is_logged_with_where_its_thread_is_stuck() -> None:
    reconciler = StuckReconciler()
    loops = RolloutLoops(reconciler, slow_tick=timedelta(milliseconds=20))  # type: ignore[arg-type]

    async def run() -> list[dict[str, Any]]:
        with capture_logs() as logs:
            loops.notice("ADDED", _rollout("chat"))
            await _until(lambda: any(e["event"] == "tick still running" for e in logs), "a slow-tick log")
            reconciler.release.set()
            task = loops._loops["ns", "chat"].task
            assert task is not None
            await asyncio.wait_for(task, timeout=30)
        return logs

    slow = next(e for e in asyncio.run(run()) if e["event"] == "tick still running")
    assert (slow["namespace"], slow["rollout"]) == ("ns", "chat")
    assert "self.release.wait" in slow["stack"]


class ReturningReconciler(FakeReconciler):
    """Reports the rollout gone at its first tick (as a transient 404 would), then ticks normally."""

    def __init__(self) -> None:
        super().__init__()
        self.ticks = 0

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        self.ticks += 1
        if self.ticks == 1:
            raise RolloutGone(name)
        return TickResult(None, timedelta(hours=1))


def test_an_event_for_a_rollout_whose_loop_ended_starts_a_new_loop() -> None:
    reconciler = ReturningReconciler()
    loops = RolloutLoops(reconciler)  # type: ignore[arg-type]

    async def run() -> None:
        loops.notice("ADDED", _rollout("chat"))
        ended = loops._loops["ns", "chat"].task
        assert ended is not None
        await asyncio.wait_for(ended, timeout=30)
        loops.notice("MODIFIED", _rollout("chat"))
        await _until(lambda: reconciler.ticks == 2, "a tick of the new loop")
        await loops.stop()

    asyncio.run(run())


def test_a_deleted_rollout_is_forgotten_by_the_reconciler() -> None:
    reconciler = ReturningReconciler()
    loops = RolloutLoops(reconciler)  # type: ignore[arg-type]

    async def run() -> None:
        loops.notice("ADDED", _rollout("chat"))
        loops.notice("DELETED", _rollout("chat"))
        await loops.stop()

    asyncio.run(run())
    assert reconciler.forgotten == [("ns", "chat")]


class OrderReconciler:
    """Records which rollouts ticked, in order, and whether from a fresh read; each found gone after
    its first tick."""

    def __init__(self) -> None:
        self.ticked: list[str] = []
        self.fresh: list[bool] = []

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        self.ticked.append(name)
        self.fresh.append(fresh)
        raise RolloutGone(name)


def _paused_since(name: str, started: str | None) -> dict[str, Any]:
    steps = [{"setWeight": 20}, {"pause": {"duration": "10s"}}, {"setWeight": 100}]
    body = model_rollout(name, "ns", steps=steps)
    if started is not None:
        body["status"] = {
            "phase": "Progressing",
            "currentStepIndex": 1,
            "currentWeight": 20,
            "stepStartedAt": started,
        }
    return body


def test_rollouts_listed_at_startup_tick_the_longest_overdue_first() -> None:
    reconciler = OrderReconciler()
    loops = RolloutLoops(reconciler)  # type: ignore[arg-type]
    listed = [
        _paused_since("new", None),  # not started: nothing timed to wait for
        _paused_since("due-later", "2026-01-01T10:00:30Z"),
        {"metadata": {"namespace": "ns", "name": "unreadable"}, "spec": {"steps": "no"}},
        _paused_since("overdue", "2026-01-01T10:00:00Z"),
    ]

    async def run() -> None:
        # One worker thread: the ticks run in the order they were queued.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=1))
        loops.resume(listed)
        tasks = [rollout.task for rollout in loops._loops.values() if rollout.task is not None]
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=30)

    asyncio.run(run())
    assert reconciler.ticked[:2] == ["overdue", "due-later"]
    assert sorted(reconciler.ticked[2:]) == ["new", "unreadable"]
    # Not yet delivered by kopf's watch: read from the API server, which may no longer have them.
    assert all(reconciler.fresh)


def test_a_rollout_its_watch_delivered_is_read_from_the_cache() -> None:
    reconciler = OrderReconciler()
    loops = RolloutLoops(reconciler)  # type: ignore[arg-type]

    async def run() -> None:
        loops.notice("ADDED", _paused_since("chat", None))
        task = loops._loops["ns", "chat"].task
        assert task is not None
        await asyncio.wait_for(task, timeout=30)

    asyncio.run(run())
    assert reconciler.fresh == [False]


class GoneAfterCancellationReconciler(FakeReconciler):
    """Its tick blocks until released, then finds the rollout gone: deleted while the tick ran."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.release = threading.Event()
        self.ended = threading.Event()

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        self.started.set()
        self.release.wait(timeout=30)
        self.ended.set()
        raise RolloutGone(name)


def test_a_cancelled_tick_ends_with_its_loop_and_its_exception_is_read() -> None:
    reconciler = GoneAfterCancellationReconciler()
    loops = RolloutLoops(reconciler)  # type: ignore[arg-type]
    unhandled: list[dict[str, Any]] = []

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: unhandled.append(context))
        loops.notice("ADDED", _rollout("chat"))
        task = loops._loops["ns", "chat"].task
        assert task is not None
        await _until(reconciler.started.is_set, "the tick to start")
        loops.notice("DELETED", _rollout("chat"))
        await asyncio.sleep(0.05)
        assert not task.done()  # its tick still runs
        reconciler.release.set()
        await asyncio.wait_for(asyncio.wait({task}), timeout=30)
        assert reconciler.ended.is_set() and task.cancelled()
        gc.collect()  # an exception never retrieved is reported when its future is collected
        await asyncio.sleep(0)

    asyncio.run(run())
    assert unhandled == []


class OverlapReconciler(FakeReconciler):
    """Its first tick blocks until released; records how many ticks ever ran at once."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.running = 0
        self.most_at_once = 0
        self.ticks = 0
        self.lock = threading.Lock()

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        with self.lock:
            self.ticks += 1
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
            first = self.ticks == 1
        if first:
            self.release.wait(timeout=30)
        with self.lock:
            self.running -= 1
        return TickResult(None, timedelta(hours=1))


def test_an_object_deleted_and_created_again_is_not_ticked_beside_its_previous_tick() -> None:
    reconciler = OverlapReconciler()
    loops = RolloutLoops(reconciler)  # type: ignore[arg-type]

    async def run() -> None:
        loops.notice("ADDED", _rollout("chat"))
        await _until(lambda: reconciler.running == 1, "the first tick to start")
        loops.notice("DELETED", _rollout("chat"))
        loops.notice("ADDED", _rollout("chat"))
        await asyncio.sleep(0.1)
        assert reconciler.ticks == 1  # the new loop waits for the previous tick's thread
        reconciler.release.set()
        await _until(lambda: reconciler.ticks == 2, "the new loop's tick")
        await loops.stop()

    asyncio.run(run())
    assert reconciler.most_at_once == 1
