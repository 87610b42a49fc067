"""The loops' worker threads, handed out by FairShare: ticks that hang in one tenant's namespaces
leave a thread to an ordinary namespace's tick, and a hung tick counts against its namespace until
its thread is really free, even after its loop stopped waiting."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest

from modelgate import tick_threads
from modelgate.tick_threads import TickThreads

WORKERS = 4
HOSTILE = 8


def quick() -> str:
    return "done"


def hostile_running(threads: TickThreads) -> int:
    return sum(threads.fair.running(f"hostile-{index}") for index in range(HOSTILE))


async def _ordinary_beside_hung_ticks(threads: TickThreads, hang: threading.Event) -> float:
    executor = ThreadPoolExecutor(max_workers=WORKERS * tick_threads.THREADS_PER_WORKER)
    asyncio.get_running_loop().set_default_executor(executor)
    try:
        hung = [asyncio.ensure_future(threads.run(f"hostile-{index}", hang.wait)) for index in range(HOSTILE)]
        await asyncio.sleep(0.5)  # two waves of four, each parked after SLOW_NAMESPACE_TICK
        started = time.monotonic()
        assert await asyncio.wait_for(threads.run("ordinary", quick), timeout=5) == "done"
        took = time.monotonic() - started
        for task in hung:
            task.cancel()
        await asyncio.sleep(0)
        assert hostile_running(threads) == HOSTILE  # their loops stopped waiting; their threads did not
        hang.set()
        await asyncio.sleep(0.2)
        assert hostile_running(threads) == 0
        return took
    finally:
        hang.set()


def test_hung_ticks_of_other_namespaces_leave_a_thread_to_an_ordinary_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tick_threads, "SLOW_NAMESPACE_TICK", timedelta(seconds=0.2))
    hang = threading.Event()
    try:
        took = asyncio.run(_ordinary_beside_hung_ticks(TickThreads(WORKERS), hang))
    finally:
        hang.set()
    assert took < 0.1, took
