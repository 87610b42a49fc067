"""The per-ModelEvaluation loops: a tick at the first event, then sleep until the decision's wake-up;
its own status writes (the same generation and run-now value) wake nothing, a new run-now value or a
check Job's change wakes it at once, and a loop whose evaluation is gone ends."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from modelgate.modelevaluation.engine.decision import RUN_NOW_ANNOTATION
from modelgate.modelevaluation.loops import EvaluationLoops
from modelgate.modelevaluation.reconciler import EvaluationGone, EvaluationReconciler
from modelgate.tick_threads import TickThreads


class CountingReconciler:
    def __init__(self, wake_after: timedelta | None) -> None:
        self.wake_after = wake_after
        self.ticks = 0
        self.gone = False

    def tick(self, namespace: str, name: str) -> datetime | None:
        if self.gone:
            raise EvaluationGone(name)
        self.ticks += 1
        return None if self.wake_after is None else datetime.now(UTC) + self.wake_after


def evaluation(run_now: str | None = None, resource_version: str = "1") -> dict[str, Any]:
    annotations = {} if run_now is None else {RUN_NOW_ANNOTATION: run_now}
    meta = {"namespace": "ns", "name": "e", "generation": 1, "annotations": annotations}
    return {"metadata": {**meta, "resourceVersion": resource_version}, "spec": {}, "status": {}}


def loops_over(reconciler: CountingReconciler) -> EvaluationLoops:
    return EvaluationLoops(cast(EvaluationReconciler, reconciler))


async def settle() -> None:
    await asyncio.sleep(0.1)


def test_status_writes_wake_nothing_and_a_run_now_value_wakes_at_once() -> None:
    async def scenario() -> None:
        reconciler = CountingReconciler(wake_after=None)
        loops = loops_over(reconciler)
        loops.notice("ADDED", evaluation())
        await settle()
        assert reconciler.ticks == 1
        for version in range(2, 6):  # its own status writes
            loops.notice("MODIFIED", evaluation(resource_version=str(version)))
        await settle()
        assert reconciler.ticks == 1, "a status write is no reason to tick"
        loops.notice("MODIFIED", evaluation(run_now="now"))
        await settle()
        assert reconciler.ticks == 2
        loops.wake_at_once("ns", "e")  # a check Job changed
        await settle()
        assert reconciler.ticks == 3
        await loops.stop()

    asyncio.run(scenario())


def test_the_loop_ticks_again_at_the_decisions_wake_up_and_ends_when_gone() -> None:
    async def scenario() -> None:
        reconciler = CountingReconciler(wake_after=timedelta(milliseconds=30))
        loops = loops_over(reconciler)
        loops.notice("ADDED", evaluation())
        await asyncio.sleep(0.2)
        assert 2 <= reconciler.ticks <= 8, "ticks at each wake-up, not in a busy loop"
        reconciler.gone = True
        await settle()
        ticks = reconciler.ticks
        await settle()
        assert reconciler.ticks == ticks
        loops.notice("MODIFIED", evaluation(run_now="again"))  # an event restarts an ended loop
        reconciler.gone = False
        await settle()
        assert reconciler.ticks > ticks
        await loops.stop()

    asyncio.run(scenario())


class SharingReconciler:
    """Records how many ticks its namespace runs in the shared threads while it ticks."""

    def __init__(self, threads: TickThreads) -> None:
        self.threads = threads
        self.running: list[int] = []

    def tick(self, namespace: str, name: str) -> datetime | None:
        self.running.append(self.threads.fair.running(namespace))
        return None


def test_its_ticks_take_their_threads_from_the_share_the_rollouts_loops_use() -> None:
    threads = TickThreads(workers=2)
    reconciler = SharingReconciler(threads)

    async def scenario() -> None:
        loops = EvaluationLoops(cast(EvaluationReconciler, reconciler), threads)
        loops.notice("ADDED", evaluation())
        await settle()
        await loops.stop()

    asyncio.run(scenario())
    assert reconciler.running == [1]
    assert threads.fair.running("ns") == 0  # its thread given back


def test_a_replica_standing_by_ticks_no_evaluation_until_it_may_act() -> None:
    reconciler = CountingReconciler(wake_after=None)
    acting = [False]

    async def scenario() -> None:
        standby = lambda namespace: None if acting[0] else "peer pod-a is alive"  # noqa: E731
        loops = EvaluationLoops(cast(EvaluationReconciler, reconciler), standby=standby)
        loops.notice("ADDED", evaluation())
        await settle()
        assert reconciler.ticks == 0
        acting[0] = True
        loops.wake_at_once("ns", "e")
        await settle()
        assert reconciler.ticks == 1
        await loops.stop()

    asyncio.run(scenario())
