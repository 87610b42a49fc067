"""The worker threads that ticks run in, for every kind of object: the event loop's executor, handed
out fairly across namespaces (fair_share.py), and a tick whose loop is cancelled outlasted rather than
dropped."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

import structlog

from modelgate.fair_share import FairShare

log = structlog.get_logger("modelgate.tick_threads")
# Measured with bench/test_scale (bench/REPORT.md): a tick mostly waits on the API server, so the
# threads must cover the ticks due at once times their round trips; 16 left 500 rollouts queued.
DEFAULT_WORKERS = 64
# A tick running this long is parked: it keeps its thread but no longer counts as a worker, and its
# namespace is slow for SLOW_NAMESPACE_MEMORY (fair_share.py). Most ticks take milliseconds (reads
# from caches, a few queries, one write); an ordinary tick waits for a worker at most this long.
SLOW_NAMESPACE_TICK = timedelta(seconds=2)
SLOW_NAMESPACE_MEMORY = timedelta(minutes=5)
# Threads for ticks, per worker: the busy ones, and those parked on a server that does not answer.
THREADS_PER_WORKER = 4
Result = TypeVar("Result")


class TickThreads:
    """The event loop's executor threads (THREADS_PER_WORKER x `workers`), handed out fairly across
    namespaces: a tenant whose ticks hang (a Prometheus that never answers) holds no more than its
    share, and the others' ticks find a worker (fair_share.py)."""

    def __init__(self, workers: int) -> None:
        self.fair: FairShare[int] = FairShare(
            workers,
            threads=workers * THREADS_PER_WORKER,
            slow_after=SLOW_NAMESPACE_TICK.total_seconds(),
            slow_memory=SLOW_NAMESPACE_MEMORY.total_seconds(),
        )
        self._waiting: dict[int, asyncio.Future[None]] = {}
        self._tickets = itertools.count()
        self._wake: asyncio.TimerHandle | None = None

    async def run(self, namespace: str, call: Callable[[], Result]) -> Result:
        """`call` in a worker thread of the event loop's executor, once `namespace` may have one.
        Its thread counts against the namespace until `call` returns, even when the caller stops
        waiting for it."""
        loop = asyncio.get_running_loop()
        ticket = next(self._tickets)
        granted = self._waiting[ticket] = loop.create_future()
        self.fair.ask(namespace, ticket)
        self._start()
        try:
            await granted
        except asyncio.CancelledError:
            if self._waiting.pop(ticket, None) is not None:
                self.fair.withdraw(namespace, ticket)
            else:  # started as it was cancelled
                self._end(namespace, ticket)
            raise
        running = loop.run_in_executor(None, call)
        running.add_done_callback(lambda _: self._end(namespace, ticket))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            await outlast(running)
            raise

    def _start(self) -> None:
        now = time.monotonic()
        for _, ticket in self.fair.start(now):
            granted = self._waiting.pop(ticket)
            if not granted.done():
                granted.set_result(None)
        if self._wake is not None:
            self._wake.cancel()
        wake_at = self.fair.wake_at(now)
        loop = asyncio.get_running_loop()
        self._wake = None if wake_at is None else loop.call_later(wake_at - now, self._start)

    def _end(self, namespace: str, ticket: int) -> None:
        self.fair.end(namespace, ticket, time.monotonic())
        self._start()


async def outlast(future: asyncio.Future[Any]) -> None:
    """Waits for `future` to end after the caller was cancelled, and reads its outcome: a cancelled
    tick's thread runs on, and its loop must not end before it (a loop started again for the same
    object would tick beside it), nor leave its exception unread. A second cancellation (the
    operator stopping) ends the wait; the outcome is still read when it comes."""
    try:
        await asyncio.wait({future})
    except asyncio.CancelledError:
        future.add_done_callback(_read_outcome)
        raise
    _read_outcome(future)


def _read_outcome(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.debug("a cancelled tick ended with an exception", error=str(future.exception()))
