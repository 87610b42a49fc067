"""The ModelRollout's shape for the controller runtime (loops.py): what wakes a rollout at once (its
spec, a command, its deletion; its candidate Deployment or InferencePool; a gate check's Job), what
wakes it no sooner than the route recheck (its routes), and its tick (reconciler.py).

Only a rollout with spec.rollback.onDelete ReturnTraffic gets a finalizer, modelgate's own: its
deletion wakes its loop, whose tick returns the traffic and removes it (reconciler.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from modelgate import observability
from modelgate.api import parse_status
from modelgate.api.one_edit import with_generated_candidate
from modelgate.clock import Clock, utc_now
from modelgate.commands import COMMAND_ANNOTATION, skips_reconcile
from modelgate.core.stepping import RESYNC, scheduled_at
from modelgate.loops import SLOW_TICK, ObjectLoops
from modelgate.peering import StandbyReason
from modelgate.policy_plans import spec_in_force
from modelgate.reconciler import Reconciler
from modelgate.routers.router_kind import RouteKey
from modelgate.routers.watched import watched_routes
from modelgate.tick_threads import TickThreads

# The workloads whose changes wake it (its candidate; a one-edit rollout's incumbent too), its routes.
Watched = tuple[frozenset[str], frozenset[RouteKey]]


def _due(body: Mapping[str, Any]) -> datetime:
    """When the rollout's next tick is due by its status: overdue ones first, then the soonest; those
    waiting for nothing timed, and those the operator cannot read (its tick marks them Failed), last."""
    try:
        due = scheduled_at(spec_in_force(body), parse_status(body.get("status") or {}))
    except ValueError:
        return datetime.max.replace(tzinfo=UTC)
    return due if due is not None else datetime.max.replace(tzinfo=UTC)


class RolloutTicker:
    noun = "rollout"
    fail_safe = True  # the retry puts the traffic back on the incumbent (fail_safe.py)

    def __init__(self, reconciler: Reconciler, clock: Clock) -> None:
        self.reconciler = reconciler
        self.clock = clock

    def trigger(self, body: Mapping[str, Any]) -> tuple[Any, ...]:
        """Its spec (generation), a pending command, the skip-reconcile annotation, and its deletion
        (a finalizer of ours to act on)."""
        meta = body["metadata"]
        annotations = meta.get("annotations") or {}
        return (
            meta.get("generation"),
            annotations.get(COMMAND_ANNOTATION),
            skips_reconcile(annotations),
            meta.get("deletionTimestamp"),
        )

    def watches(self, body: Mapping[str, Any]) -> Watched:
        spec = body.get("spec") or {}
        routes = watched_routes(spec.get("trafficRouting") or {})
        names: set[str] = set()
        if spec.get("candidatePatch") is not None:
            # Its incumbent takes the patch once promoted; its candidate is the one generated.
            names.add(str((spec.get("incumbent") or {}).get("deployment")))
            with contextlib.suppress(ValueError):  # a spec the reconciler refuses, naming the field
                spec = with_generated_candidate(spec)
        candidate = spec.get("candidate") or {}
        workload = candidate.get("workload") or {}
        names.add(
            str(candidate.get("deployment") or candidate.get("inferencePool") or workload.get("name") or "")
        )
        return frozenset(names), routes

    def tick(self, namespace: str, name: str, *, fresh: bool) -> datetime:
        result = self.reconciler.tick_by_name(namespace, name, fresh=fresh)
        return self.clock() + result.wake_after

    def forget(self, namespace: str, name: str) -> None:
        self.reconciler.forget(namespace, name)
        observability.forget_rollout(namespace, name)


class RolloutLoops(ObjectLoops[Watched]):
    def __init__(
        self,
        reconciler: Reconciler,
        route_recheck: timedelta = RESYNC,
        slow_tick: timedelta = SLOW_TICK,
        threads: TickThreads | None = None,
        standby: StandbyReason | None = None,
        clock: Clock = utc_now,
    ) -> None:
        super().__init__(
            RolloutTicker(reconciler, clock),
            recheck=route_recheck,
            slow_tick=slow_tick,
            threads=threads,
            clock=clock,
            standby=standby,
        )
        self._policy_refs: dict[tuple[str, str], tuple[str, str]] = {}  # rollout: policy kind, name

    def resume(self, bodies: Iterable[Mapping[str, Any]]) -> None:
        """Starts the loops of the rollouts listed when the operator starts, the longest overdue first:
        their first ticks reach the worker threads in this order. kopf's own listing, which comes
        later, finds them running."""
        for body in sorted(bodies, key=_due):
            self.notice(None, body, watched=False)

    def notice(self, event_type: str | None, body: Mapping[str, Any], *, watched: bool = True) -> None:
        """Also keeps which policy (spec.policyRef) each rollout names, for notice_policy."""
        meta = body["metadata"]
        key = (meta["namespace"], meta["name"])
        ref = (body.get("spec") or {}).get("policyRef") or {}
        if event_type == "DELETED" or not ref:
            self._policy_refs.pop(key, None)
        else:
            self._policy_refs[key] = (str(ref.get("kind")), str(ref.get("name")))
        super().notice(event_type, body, watched=watched)

    def notice_policy(self, kind: str, namespace: str | None, name: str) -> None:
        """A policy was created, changed or deleted: the rollouts naming it look again now (one held
        for it goes on; one with a pin notes the drift)."""
        for (rollout_namespace, rollout), ref in list(self._policy_refs.items()):
            if ref == (kind, name) and namespace in (None, rollout_namespace):
                self.wake_at_once(rollout_namespace, rollout)

    def notice_candidate(self, namespace: str, name: str) -> None:
        """A Deployment or an InferencePool changed: rollouts waiting for it as their candidate look
        again now."""
        for loop in self.loops_in(namespace):
            if name in loop.watches[0]:
                loop.wake_at_once()

    def notice_route(self, plural: str, namespace: str, name: str) -> None:
        """A route (an object of kind `plural`) changed or went: its rollouts look again
        `route_recheck` after their last tick, at the latest; this is what sets a finished rollout's
        weights right, which otherwise sleeps long."""
        for loop in self.loops_in(namespace):
            if (plural, name) in loop.watches[1]:
                loop.wake.set()
