"""The controller runtime for every kind the operator reconciles: a task per object and its wake-ups.

One asyncio task per object, which ticks in a worker thread (tick_threads.py), then sleeps until
the wake-up its tick asked for or until something that matters changes (`Loop.wake_at_once`: at
once; `Loop.wake`: no sooner than `recheck` after the last tick, so that two writers of one object
do not fight at the speed of the watch). A kind brings its shape, a `Ticker`: what wakes an
object, its tick, what to forget when it goes (rollout_loops.py, modelevaluation/loops.py).

kopf's own daemons and timers would add a finalizer to every object, and a finalizer makes deletion
hang while the operator is down; watch events plus these tasks need none.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

import structlog

from modelgate import observability
from modelgate.clock import Clock, utc_now
from modelgate.fail_safe import transient
from modelgate.kube import NamespaceTerminating, ObjectGone
from modelgate.peering import STANDBY_RECHECK, StandbyReason
from modelgate.tick_threads import DEFAULT_WORKERS, TickThreads, outlast

log = structlog.get_logger("modelgate.loops")
Key = tuple[str, str]  # namespace, name
# After a failed tick (API server unreachable, ...) the tick is retried after this, doubled each time
# up to the maximum; after an unexpected exception (a bug, fail_safe.py), for a kind whose retry runs
# a fail-safe (`Ticker.fail_safe`), no later than the short maximum, and again while that fails.
ERROR_BACKOFF = timedelta(seconds=1)
MAX_ERROR_BACKOFF = timedelta(seconds=30)
MAX_UNEXPECTED_BACKOFF = timedelta(seconds=4)
# A tick still running after this is logged (again each time this passes) with the stack of its
# thread: every request a tick makes has a timeout, so one this slow is stuck somewhere it should not.
SLOW_TICK = timedelta(seconds=120)
Watches = TypeVar("Watches")
WatchesOut = TypeVar("WatchesOut", covariant=True)


class Ticker(Protocol[WatchesOut]):
    """A kind's shape. `noun` names the object in log lines ("rollout": rollout=<name>)."""

    noun: str
    fail_safe: bool  # its retry after an unexpected exception runs a fail-safe: retried soon

    def trigger(self, body: Mapping[str, Any]) -> tuple[Any, ...]:
        """What wakes the object at once when it changes (its generation, say; not its status)."""
        ...

    def watches(self, body: Mapping[str, Any]) -> WatchesOut:
        """What else the object's loop is woken by (the kind's loops look it up)."""
        ...

    def tick(self, namespace: str, name: str, *, fresh: bool) -> datetime:
        """One tick, in a worker thread; when the next is due. Raises ObjectGone when the object
        no longer exists. `fresh`: read it from the API server, not the watch cache."""
        ...

    def forget(self, namespace: str, name: str) -> None:
        """The object is gone: whatever is kept about it goes too."""
        ...


@dataclass
class Loop(Generic[Watches]):
    trigger: tuple[Any, ...]
    watches: Watches
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    # Whether what set `wake` asks for a tick at once (not only a recheck).
    wake_now: bool = False
    task: asyncio.Task[None] | None = None
    thread: int | None = None  # the worker thread running its tick, while one runs
    # Whether kopf's watch has delivered it. One listed at startup is read from the API server until
    # then: deleted before kopf's listing, it is found gone rather than ticked from the listed copy.
    watched: bool = True

    def wake_at_once(self) -> None:
        self.wake_now = True
        self.wake.set()


class ObjectLoops(Generic[Watches]):
    def __init__(
        self,
        ticker: Ticker[Watches],
        *,
        recheck: timedelta,
        slow_tick: timedelta = SLOW_TICK,
        threads: TickThreads | None = None,
        clock: Clock = utc_now,
        standby: StandbyReason | None = None,
    ) -> None:
        self.ticker = ticker
        self.recheck = recheck.total_seconds()
        self.slow_tick = slow_tick
        self.threads = threads or TickThreads(DEFAULT_WORKERS)
        self.clock = clock
        self.standby = standby  # peering.py: why this replica must not act in a namespace now
        self._loops: dict[Key, Loop[Watches]] = {}
        # Loops cancelled while their tick's thread runs on: one started again for the same object
        # (deleted and created again) waits for it, so two ticks of one object never overlap.
        self._ending: dict[Key, asyncio.Task[None]] = {}

    def notice(self, event_type: str | None, body: Mapping[str, Any], *, watched: bool = True) -> None:
        """Called for every watch event of the kind (`watched`), and for objects listed at startup."""
        meta = body["metadata"]
        key = (meta["namespace"], meta["name"])
        if event_type == "DELETED":
            self._forget(key)
            return
        watches = self.ticker.watches(body)
        loop = self._loops.get(key)
        if loop is None or loop.task is None or loop.task.done():
            # New, or its loop ended (it found the object gone, or failed): an event says it exists.
            if loop is not None:
                log.info(
                    f"restarting the {self.ticker.noun}'s loop",
                    namespace=key[0],
                    **{self.ticker.noun: key[1]},
                )
            loop = Loop(self.ticker.trigger(body), watches, watched=watched)
            self._loops[key] = loop
            loop.task = asyncio.create_task(
                self._run(key, loop, after=self._ending.get(key)),
                name=f"{self.ticker.noun} {key[0]}/{key[1]}",
            )
            return
        loop.watches = watches
        loop.watched = loop.watched or watched
        trigger = self.ticker.trigger(body)
        if trigger != loop.trigger:
            loop.trigger = trigger
            loop.wake_at_once()

    def wake_at_once(self, namespace: str, name: str) -> None:
        """Something the object waits for (a check's Job) changed: it looks again now."""
        loop = self._loops.get((namespace, name))
        if loop is not None:
            loop.wake_at_once()

    def __len__(self) -> int:
        """The objects handled now."""
        return len(self._loops)

    def loops_in(self, namespace: str) -> list[Loop[Watches]]:
        return [loop for (loop_namespace, _), loop in self._loops.items() if loop_namespace == namespace]

    async def stop(self) -> None:
        """Cancels every loop (`modelgate run` gives the threads of ticks still running a grace)."""
        for key in list(self._loops):
            self._forget(key)

    def _forget(self, key: Key) -> None:
        loop = self._loops.pop(key, None)
        if loop is not None and loop.task is not None and not loop.task.done():
            loop.task.cancel()
            self._ending[key] = loop.task
            loop.task.add_done_callback(functools.partial(self._ended, key))
        self.ticker.forget(*key)

    def _ended(self, key: Key, task: asyncio.Task[None]) -> None:
        if self._ending.get(key) is task:
            del self._ending[key]

    def _tick(self, key: Key, loop: Loop[Watches], due: float) -> tuple[float, float]:
        """In a worker thread; `due` is the time.monotonic() at which the tick should have started.
        Returns when the tick ended and when the next is due (both time.monotonic())."""
        observability.TICK_WAIT_SECONDS.observe(max(time.monotonic() - due, 0.0))
        loop.thread = threading.get_ident()
        try:
            reason = None if self.standby is None else self.standby(key[0])
            if reason is not None:
                log.info("standing by", namespace=key[0], reason=reason, **{self.ticker.noun: key[1]})
                wake_at = self.clock() + STANDBY_RECHECK
            else:
                wake_at = self.ticker.tick(*key, fresh=not loop.watched)
            ended = time.monotonic()
            return ended, ended + max((wake_at - self.clock()).total_seconds(), 0.0)
        finally:
            loop.thread = None

    async def _watched_tick(self, key: Key, loop: Loop[Watches], due: float) -> tuple[float, float]:
        """The tick, logged with its thread's stack each time it has run another `slow_tick`."""
        tick = asyncio.ensure_future(self.threads.run(key[0], functools.partial(self._tick, key, loop, due)))
        started = time.monotonic()
        try:
            while not (await asyncio.wait({tick}, timeout=self.slow_tick.total_seconds()))[0]:
                log.warning(
                    "tick still running",
                    namespace=key[0],
                    seconds=round(time.monotonic() - started, 1),
                    stack=_stack(loop.thread),
                    **{self.ticker.noun: key[1]},
                )
        except asyncio.CancelledError:
            tick.cancel()  # it ends once its thread does (TickThreads.run)
            await outlast(tick)
            raise
        return tick.result()

    async def _run(self, key: Key, loop: Loop[Watches], after: asyncio.Task[None] | None) -> None:
        namespace, named = key[0], {self.ticker.noun: key[1]}
        if after is not None:
            await asyncio.wait({after})  # the previous loop of this object, its tick still running
        backoff = ERROR_BACKOFF
        due = time.monotonic()
        while True:
            loop.wake.clear()
            loop.wake_now = False
            try:
                # From the tick's end, not from when this loop resumed: a busy event loop does not
                # push the next tick later.
                ended, deadline = await self._watched_tick(key, loop, due)
                backoff = ERROR_BACKOFF
            except ObjectGone:
                log.info(f"{self.ticker.noun} gone", namespace=namespace, **named)
                return
            except NamespaceTerminating:
                # Not a failure: the object goes with its namespace, and its loop once it is gone.
                log.info("namespace being deleted", namespace=namespace, **named)
                ended = time.monotonic()
                deadline = ended + backoff.total_seconds()
                backoff = min(backoff * 2, MAX_ERROR_BACKOFF)
            except Exception as error:  # a failed tick is retried; the loop must outlive it
                log.exception("tick failed; retrying", namespace=namespace, error=str(error), **named)
                ended = time.monotonic()
                soon = self.ticker.fail_safe and not transient(error)
                wait = min(backoff, MAX_UNEXPECTED_BACKOFF) if soon else backoff
                deadline = ended + wait.total_seconds()
                backoff = min(backoff * 2, MAX_ERROR_BACKOFF)
            due = await self._sleep(loop, deadline, ended)

    async def _sleep(self, loop: Loop[Watches], deadline: float, ended: float) -> float:
        """Until `deadline`, a change that wakes the object at once, or `recheck` after the tick that
        ended at `ended` if it was woken otherwise; returns when the next tick is due."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(loop.wake.wait(), timeout=max(deadline - time.monotonic(), 0.0))
            if not loop.wake.is_set() or loop.wake_now:
                return min(deadline, time.monotonic())  # woken early by a change: due at once
            loop.wake.clear()  # a recheck
            deadline = min(deadline, ended + self.recheck)


def _stack(thread: int | None) -> str | None:
    frame = None if thread is None else sys._current_frames().get(thread)
    return None if frame is None else "".join(traceback.format_stack(frame))
