"""The ModelEvaluation's shape for the controller runtime (loops.py): a tick, then sleep until the
decision's wake-up (the next scheduled run; 2 s while a run runs) or until something that matters
changes: a new generation or run-now annotation (its own status writes are none), or one of its
check Jobs (`wake_at_once`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from modelgate import observability
from modelgate.clock import Clock, utc_now
from modelgate.loops import ObjectLoops
from modelgate.modelevaluation.engine.decision import RUN_NOW_ANNOTATION
from modelgate.modelevaluation.reconciler import EvaluationReconciler
from modelgate.peering import StandbyReason
from modelgate.tick_threads import TickThreads

# A look without a reason: what a missed watch event costs at most.
MAX_SLEEP = timedelta(minutes=5)


class EvaluationTicker:
    noun = "evaluation"
    fail_safe = False  # no traffic to return: a bug's retries back off like an outage's

    def __init__(self, reconciler: EvaluationReconciler, clock: Clock) -> None:
        self.reconciler = reconciler
        self.clock = clock

    def trigger(self, body: Mapping[str, Any]) -> tuple[Any, ...]:
        meta = body["metadata"]
        return (meta.get("generation"), (meta.get("annotations") or {}).get(RUN_NOW_ANNOTATION))

    def watches(self, body: Mapping[str, Any]) -> None:
        """Nothing but its check Jobs, which name it as their owner."""

    def tick(self, namespace: str, name: str, *, fresh: bool) -> datetime:
        wake_at = self.reconciler.tick(namespace, name)
        latest = self.clock() + MAX_SLEEP
        return latest if wake_at is None else min(wake_at, latest)

    def forget(self, namespace: str, name: str) -> None:
        observability.forget_evaluation(namespace, name)


class EvaluationLoops(ObjectLoops[None]):
    def __init__(
        self,
        reconciler: EvaluationReconciler,
        threads: TickThreads | None = None,
        clock: Clock = utc_now,
        standby: StandbyReason | None = None,
    ) -> None:
        # Nothing wakes an evaluation but at once: its recheck is never used.
        super().__init__(
            EvaluationTicker(reconciler, clock),
            recheck=MAX_SLEEP,
            threads=threads,
            clock=clock,
            standby=standby,
        )
