"""One asyncio task per ModelEvaluation: tick in a worker thread (tick_threads.py, shared with the
rollouts' loops), then sleep until the decision's
wake-up (the next scheduled run; 2 s while a run runs) or until something that matters changes: a
new generation or run-now annotation, or one of its check Jobs."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import structlog

from modelgate import observability
from modelgate.clock import Clock, utc_now
from modelgate.evaluation_reconciler import EvaluationGone, EvaluationReconciler
from modelgate.reevaluation.decision import RUN_NOW_ANNOTATION
from modelgate.tick_threads import DEFAULT_WORKERS, TickThreads

log = structlog.get_logger("modelgate.evaluations")
Key = tuple[str, str]  # namespace, name
# A look without a reason: what a missed watch event costs at most.
MAX_SLEEP = timedelta(minutes=5)
ERROR_BACKOFF = timedelta(seconds=1)
MAX_ERROR_BACKOFF = timedelta(seconds=30)


@dataclass
class _Evaluation:
    trigger: tuple[Any, ...]
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


def _trigger(body: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = body["metadata"]
    return (meta.get("generation"), (meta.get("annotations") or {}).get(RUN_NOW_ANNOTATION))


class EvaluationLoops:
    def __init__(
        self, reconciler: EvaluationReconciler, threads: TickThreads | None = None, clock: Clock = utc_now
    ) -> None:
        self.reconciler = reconciler
        self.threads = threads or TickThreads(DEFAULT_WORKERS)
        self.clock = clock
        self._evaluations: dict[Key, _Evaluation] = {}

    def notice(self, event_type: str | None, body: Mapping[str, Any]) -> None:
        """Called for every watch event of a ModelEvaluation."""
        meta = body["metadata"]
        key = (meta["namespace"], meta["name"])
        if event_type == "DELETED":
            self._forget(key)
            return
        evaluation = self._evaluations.get(key)
        if evaluation is None or evaluation.task is None or evaluation.task.done():
            evaluation = _Evaluation(_trigger(body))
            self._evaluations[key] = evaluation
            evaluation.task = asyncio.create_task(
                self._run(key, evaluation), name=f"evaluation {key[0]}/{key[1]}"
            )
            return
        trigger = _trigger(body)
        if trigger != evaluation.trigger:
            evaluation.trigger = trigger
            evaluation.wake.set()

    def notice_evaluation(self, namespace: str, name: str) -> None:
        """One of its check Jobs changed: it looks now."""
        evaluation = self._evaluations.get((namespace, name))
        if evaluation is not None:
            evaluation.wake.set()

    async def stop(self) -> None:
        for key in list(self._evaluations):
            self._forget(key)

    def _forget(self, key: Key) -> None:
        evaluation = self._evaluations.pop(key, None)
        if evaluation is not None and evaluation.task is not None:
            evaluation.task.cancel()
        observability.forget_evaluation(*key)

    async def _run(self, key: Key, evaluation: _Evaluation) -> None:
        backoff = ERROR_BACKOFF
        while True:
            evaluation.wake.clear()
            try:
                wake_at = await self.threads.run(key[0], functools.partial(self.reconciler.tick, *key))
            except EvaluationGone:
                log.info("evaluation gone", namespace=key[0], evaluation=key[1])
                return
            except Exception as error:  # a failed tick is retried; the loop must outlive it
                log.exception(
                    "evaluation tick failed; retrying", namespace=key[0], evaluation=key[1], error=str(error)
                )
                sleep = backoff
                backoff = min(backoff * 2, MAX_ERROR_BACKOFF)
            else:
                backoff = ERROR_BACKOFF
                now = self.clock()
                sleep = MAX_SLEEP if wake_at is None else min(max(wake_at - now, timedelta(0)), MAX_SLEEP)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(evaluation.wake.wait(), timeout=sleep.total_seconds())
