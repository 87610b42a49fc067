"""One asyncio task per ModelRollout: tick, then sleep until the engine's next wake-up or until
something that matters changes (the spec, a command, the candidate Deployment or InferencePool: at
once; its routes: no sooner than RESYNC after the last tick, so that two writers of the route do not
fight at the speed of the watch).

kopf's own daemons and timers would add a finalizer to every ModelRollout, and a finalizer makes
deletion hang while the operator is down; watch events plus these tasks need none. Only a rollout
with spec.rollback.onDelete ReturnTraffic gets one, modelgate's own: its deletion wakes its loop,
whose tick returns the traffic and removes it (reconciler.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import threading
import time
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from modelgate import observability
from modelgate.api import parse_spec, parse_status
from modelgate.commands import COMMAND_ANNOTATION, skips_reconcile
from modelgate.core.schedule import RESYNC, scheduled_at
from modelgate.fail_safe import transient
from modelgate.kube import NamespaceTerminating
from modelgate.reconciler import Reconciler, RolloutGone, TickResult
from modelgate.routers.router_kind import RouteKey
from modelgate.routers.watched import watched_routes
from modelgate.tick_threads import DEFAULT_WORKERS, TickThreads, outlast

log = structlog.get_logger("modelgate.loops")
Key = tuple[str, str]  # namespace, name
# After a failed tick (API server unreachable, ...) the tick is retried after this, doubled each time
# up to the maximum; after an unexpected exception (a bug, fail_safe.py) no later than the short
# maximum: its retry is what runs the fail-safe, and the fail-safe again while that fails.
ERROR_BACKOFF = timedelta(seconds=1)
MAX_ERROR_BACKOFF = timedelta(seconds=30)
MAX_UNEXPECTED_BACKOFF = timedelta(seconds=4)
# A tick still running after this is logged (again each time this passes) with the stack of its
# thread: every request a tick makes has a timeout, so one this slow is stuck somewhere it should not.
SLOW_TICK = timedelta(seconds=120)
# When the operator stops, how long its loops wait for their ticks still running (`modelgate run`
# then gives their threads a grace of its own).
STOP_WAIT = timedelta(seconds=2)


@dataclass
class _Rollout:
    trigger: tuple[Any, ...]
    candidate: str
    routes: frozenset[RouteKey]
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    # Whether what set `wake` asks for a tick at once (not only a route change).
    wake_now: bool = False
    task: asyncio.Task[None] | None = None
    thread: int | None = None  # the worker thread running its tick, while one runs
    # Whether kopf's watch has delivered it. One listed at startup is read from the API server until
    # then: deleted before kopf's listing, it is found gone rather than ticked from the listed copy.
    watched: bool = True

    def wake_at_once(self) -> None:
        self.wake_now = True
        self.wake.set()


def _trigger(body: Mapping[str, Any]) -> tuple[Any, ...]:
    """What wakes a rollout at once when it changes: its spec (generation), a pending command, the
    skip-reconcile annotation, and its deletion (a finalizer of ours to act on)."""
    meta = body["metadata"]
    annotations = meta.get("annotations") or {}
    return (
        meta.get("generation"),
        annotations.get(COMMAND_ANNOTATION),
        skips_reconcile(annotations),
        meta.get("deletionTimestamp"),
    )


def _candidate_and_routes(body: Mapping[str, Any]) -> tuple[str, frozenset[RouteKey]]:
    spec = body.get("spec") or {}
    routes = watched_routes(spec.get("trafficRouting") or {})
    candidate = spec.get("candidate") or {}
    name = candidate.get("deployment") or candidate.get("inferencePool") or ""
    return str(name), routes


def _due(body: Mapping[str, Any]) -> datetime:
    """When the rollout's next tick is due by its status: overdue ones first, then the soonest; those
    waiting for nothing timed, and those the operator cannot read (its tick marks them Failed), last."""
    try:
        due = scheduled_at(parse_spec(body.get("spec") or {}), parse_status(body.get("status") or {}))
    except ValueError:
        return datetime.max.replace(tzinfo=UTC)
    return due if due is not None else datetime.max.replace(tzinfo=UTC)


class RolloutLoops:
    def __init__(
        self,
        reconciler: Reconciler,
        route_recheck: timedelta = RESYNC,
        slow_tick: timedelta = SLOW_TICK,
        threads: TickThreads | None = None,
    ) -> None:
        self.reconciler = reconciler
        self.route_recheck = route_recheck.total_seconds()
        self.slow_tick = slow_tick
        self.threads = threads or TickThreads(DEFAULT_WORKERS)
        self._rollouts: dict[Key, _Rollout] = {}

    def notice(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Called for every watch event of a ModelRollout."""
        self._notice(event_type, body, watched=True)

    def resume(self, bodies: Iterable[Mapping[str, Any]]) -> None:
        """Starts the loops of the rollouts listed when the operator starts, the longest overdue first:
        their first ticks reach the worker threads in this order. kopf's own listing, which comes
        later, finds them running."""
        for body in sorted(bodies, key=_due):
            self._notice(None, body, watched=False)

    def _notice(self, event_type: str | None, body: Mapping[str, Any], *, watched: bool) -> None:
        meta = body["metadata"]
        key = (meta["namespace"], meta["name"])
        if event_type == "DELETED":
            self._forget(key)
            return
        candidate, routes = _candidate_and_routes(body)
        rollout = self._rollouts.get(key)
        if rollout is None or rollout.task is None or rollout.task.done():
            # New, or its loop ended (it found the rollout gone, or failed): an event says it exists.
            if rollout is not None:
                log.info("restarting the rollout's loop", namespace=key[0], rollout=key[1])
            rollout = _Rollout(_trigger(body), candidate, routes, watched=watched)
            self._rollouts[key] = rollout
            rollout.task = asyncio.create_task(self._run(key, rollout), name=f"rollout {key[0]}/{key[1]}")
            return
        rollout.candidate, rollout.routes = candidate, routes
        rollout.watched = rollout.watched or watched
        trigger = _trigger(body)
        if trigger != rollout.trigger:
            rollout.trigger = trigger
            rollout.wake_at_once()

    def notice_candidate(self, namespace: str, name: str) -> None:
        """A Deployment or an InferencePool changed: rollouts waiting for it as their candidate look
        again now."""
        for (rollout_namespace, _), rollout in self._rollouts.items():
            if rollout_namespace == namespace and rollout.candidate == name:
                rollout.wake_at_once()

    def notice_rollout(self, namespace: str, name: str) -> None:
        """Something the rollout waits for (a gate check's Job) changed: it looks again now."""
        rollout = self._rollouts.get((namespace, name))
        if rollout is not None:
            rollout.wake_at_once()

    def notice_route(self, plural: str, namespace: str, name: str) -> None:
        """A route (an object of kind `plural`) changed or went: its rollouts look again
        `route_recheck` after their last tick, at the latest; this is what sets a finished rollout's
        weights right, which otherwise sleeps long."""
        for (rollout_namespace, _), rollout in self._rollouts.items():
            if rollout_namespace == namespace and (plural, name) in rollout.routes:
                rollout.wake.set()

    async def stop(self) -> None:
        """Cancels every loop; waits up to STOP_WAIT for the ticks still running to end."""
        tasks = [rollout.task for rollout in self._rollouts.values() if rollout.task is not None]
        for key in list(self._rollouts):
            self._forget(key)
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_WAIT.total_seconds())

    def _forget(self, key: Key) -> None:
        rollout = self._rollouts.pop(key, None)
        if rollout is not None and rollout.task is not None:
            rollout.task.cancel()
        self.reconciler.forget(*key)
        observability.forget_rollout(*key)

    def _tick(self, key: Key, rollout: _Rollout, due: float) -> tuple[TickResult, float]:
        """In a worker thread; `due` is the time.monotonic() at which the tick should have started.
        Returns the result and when the tick ended, from which its next wake-up counts."""
        observability.TICK_WAIT_SECONDS.observe(max(time.monotonic() - due, 0.0))
        rollout.thread = threading.get_ident()
        try:
            return self.reconciler.tick_by_name(*key, fresh=not rollout.watched), time.monotonic()
        finally:
            rollout.thread = None

    async def _watched_tick(self, key: Key, rollout: _Rollout, due: float) -> tuple[TickResult, float]:
        """The tick, logged with its thread's stack each time it has run another `slow_tick`."""
        tick = asyncio.ensure_future(
            self.threads.run(key[0], functools.partial(self._tick, key, rollout, due))
        )
        started = time.monotonic()
        try:
            while not (await asyncio.wait({tick}, timeout=self.slow_tick.total_seconds()))[0]:
                log.warning(
                    "tick still running",
                    namespace=key[0],
                    rollout=key[1],
                    seconds=round(time.monotonic() - started, 1),
                    stack=_stack(rollout.thread),
                )
        except asyncio.CancelledError:
            tick.cancel()  # it ends once its thread does (TickThreads.run)
            await outlast(tick)
            raise
        return tick.result()

    async def _run(self, key: Key, rollout: _Rollout) -> None:
        namespace, name = key
        backoff = ERROR_BACKOFF
        due = time.monotonic()
        while True:
            rollout.wake.clear()
            rollout.wake_now = False
            try:
                result, ended = await self._watched_tick(key, rollout, due)
            except RolloutGone:
                log.info("rollout gone", namespace=namespace, rollout=name)
                return
            except NamespaceTerminating:
                # Not a failure: the rollout goes with its namespace, and its loop once it is gone.
                log.info("namespace being deleted", namespace=namespace, rollout=name)
                ended = time.monotonic()
                deadline = ended + backoff.total_seconds()
                backoff = min(backoff * 2, MAX_ERROR_BACKOFF)
            except Exception as error:  # a failed tick is retried; the loop must outlive it
                log.exception("tick failed; retrying", namespace=namespace, rollout=name, error=str(error))
                ended = time.monotonic()
                wait = backoff if transient(error) else min(backoff, MAX_UNEXPECTED_BACKOFF)
                deadline = ended + wait.total_seconds()
                backoff = min(backoff * 2, MAX_ERROR_BACKOFF)
            else:
                # From the tick's end, not from when this loop resumed: a busy event loop does not
                # push the next tick later.
                deadline = ended + result.wake_after.total_seconds()
                backoff = ERROR_BACKOFF
            due = await self._sleep(rollout, deadline, ended)

    async def _sleep(self, rollout: _Rollout, deadline: float, ended: float) -> float:
        """Until `deadline`, a change that wakes the rollout at once, or `route_recheck` after the
        tick that ended at `ended` if its route changed; returns when the next tick is due."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(rollout.wake.wait(), timeout=max(deadline - time.monotonic(), 0.0))
            if not rollout.wake.is_set() or rollout.wake_now:
                return min(deadline, time.monotonic())  # woken early by a change: due at once
            rollout.wake.clear()  # the route changed
            deadline = min(deadline, ended + self.route_recheck)


def _stack(thread: int | None) -> str | None:
    frame = None if thread is None else sys._current_frames().get(thread)
    return None if frame is None else "".join(traceback.format_stack(frame))
