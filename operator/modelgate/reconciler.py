"""One reconcile tick of one ModelRollout: observe (Kubernetes, the metric provider), decide (the pure
engine), apply (weights first, then Events, then status). Synchronous: the operator runs it in a thread.

A tick is idempotent: weights are absolute, the status is written whole, a command is applied once
by its id. Should it fail half-way, the next tick observes what happened and carries on. A status
change that may wait (core/stepping.py: a new evaluation with the same verdicts, a verified weight) is
held in memory and written with the next one that may not, or after core.stepping.MAX_STATUS_HOLD.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import structlog

from modelgate import API_GROUP, API_VERSION, PLURAL, observability
from modelgate.api import (
    InvalidSpecError,
    ModelRolloutSpec,
    ModelRolloutStatus,
    RollbackReason,
    RolloutRef,
    WorkloadRef,
    parse_spec,
    parse_status,
)
from modelgate.api.policy_ref import PolicyKind, PolicyRef
from modelgate.clock import Clock, utc_now
from modelgate.commands import COMMAND_ANNOTATION, decode_command, skips_reconcile
from modelgate.core import (
    Decision,
    SpecProblem,
    WriteFailed,
    WriteResult,
    decide,
    decide_unusable,
    events_to_post,
    may_hold,
)
from modelgate.core.actions import FINALIZER, after_evidence, after_write, scale_down_event
from modelgate.core.endings import decide_generated_deletion, decide_policy_unresolved, in_force
from modelgate.core.model import (
    ChangeGenerated,
    ClearCommand,
    CollectEvidence,
    DeleteGateJobs,
    Event,
    Notify,
    PostEvents,
    RecordEnding,
    RemoveFinalizer,
    ScaleDownIncumbent,
    SetFinalizer,
    StartGateChecks,
    WriteRoute,
    WriteStatus,
)
from modelgate.core.notifying import BreachEvidence
from modelgate.core.stepping import MAX_STATUS_HOLD, MIN_WAKEUP, RESYNC, WRITE_RETRY
from modelgate.fail_safe import TickFailures, fail_safe_decision, forgotten_status
from modelgate.kube import Conflict, Kube, KubeError, NotFound, ObjectGone
from modelgate.kube.gate_jobs import GateJobs
from modelgate.metrics import BreachExplainer, MetricProviders
from modelgate.notifications import Notifier
from modelgate.operator_config import OperatorConfig
from modelgate.policy_plans import LivePolicy, PolicyPlan, PolicyTick, Unresolved, pinned_spec, plan_for
from modelgate.routers import SideKinds, TrafficRouter, backend_service, router_for
from modelgate.routers.generated_candidate import GeneratedCandidate
from modelgate.tick_observation import TickObserver

log = structlog.get_logger("modelgate.reconciler")


class RolloutGone(ObjectGone):
    """The ModelRollout was deleted; its loop ends."""


@dataclass(frozen=True)
class _Held:
    """A rollout's status newer than the one written (`written`, as the API server has it), held in
    memory since `since`; it stands for the stored one only while that is still `written`."""

    uid: str | None
    written: ModelRolloutStatus
    status: ModelRolloutStatus
    since: datetime


@dataclass(frozen=True)
class _Scene:
    """What applying a tick's actions needs besides the kube client: the rollout, its spec (with
    `analysed`, the watch window's metrics in force), its router and breach explainer, the status the
    tick started from and the one stored."""

    body: Mapping[str, Any]
    spec: ModelRolloutSpec | None
    analysed: ModelRolloutSpec | None
    router: TrafficRouter | None
    explainer: BreachExplainer | None
    before: ModelRolloutStatus
    stored: ModelRolloutStatus


@dataclass(frozen=True)
class TickResult:
    decision: Decision | None
    wake_after: timedelta


class Reconciler:
    def __init__(
        self,
        kube: Kube,
        clock: Clock = utc_now,
        evaluator_image: str | None = None,
        status_hold: timedelta = MAX_STATUS_HOLD,
        notifier: Notifier | None = None,
        config: OperatorConfig | None = None,
    ) -> None:
        config = config or OperatorConfig()
        self.kube = kube
        self.clock = clock
        self.status_hold = status_hold  # how long a status change may wait in memory (core/stepping.py)
        self.providers = MetricProviders(kube, config.egress, config.token_allowlist)
        self.gate_jobs = GateJobs(
            kube,
            evaluator_image or config.evaluator_image,
            config.check_pod_policy,
            backend_service,
            config.egress,
            config.evaluator_env,
        )
        self.observer = TickObserver(kube, self.gate_jobs, clock)
        self.notifier = notifier or Notifier(kube, config.egress)
        self.notification_defaults = config.notification_defaults
        # Per rollout; each is touched only by its rollout's tick, one at a time.
        self._held: dict[tuple[str, str], _Held] = {}
        self.failures = TickFailures()

    def forget(self, namespace: str, name: str) -> None:
        """The rollout is gone: whatever of its status was held goes with it."""
        self._held.pop((namespace, name), None)
        self.failures.passed((namespace, name))

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        """Reads the rollout from the watch cache, which holds the newer of the watch's copy and the
        one our own last write returned (never one that predates it), or with `fresh` from the API
        server. Raises RolloutGone when it no longer exists."""
        try:
            body = self.kube.get_custom(API_GROUP, API_VERSION, namespace, PLURAL, name, fresh=fresh)
        except NotFound:
            self.forget(namespace, name)
            raise RolloutGone(f"ModelRollout {namespace}/{name} no longer exists") from None
        return self.tick(body)

    def tick(self, body: Mapping[str, Any]) -> TickResult:
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        structlog.contextvars.bind_contextvars(namespace=namespace, rollout=name)
        observability.ROLLOUT_TICKS.labels(namespace, name).inc()
        try:
            with observability.RECONCILE_SECONDS.time():
                result = self._tick(body, namespace, name)
        except Exception as error:
            if not self.failures.fail_safe_due((namespace, name), error):
                raise  # retried by the loop (fail_safe.py says when the fail-safe runs)
            log.exception("tick failed again; the fail-safe returns the candidate's traffic")
            stored, failed = fail_safe_decision(body, error, self.clock())
            return self._failed(body, stored, stored, failed)
        finally:
            structlog.contextvars.unbind_contextvars("namespace", "rollout", "step", "weight")
        self.failures.passed((namespace, name))
        return result

    def _tick(self, body: Mapping[str, Any], namespace: str, name: str) -> TickResult:
        meta = body["metadata"]
        if meta.get("deletionTimestamp"):
            return self._deleting(body)
        if skips_reconcile(meta.get("annotations")):
            log.info("skip-reconcile is set; leaving the rollout alone")
            return TickResult(None, RESYNC)
        generation = int(meta.get("generation", 0))
        try:
            stored = parse_status(body.get("status") or {})
        except InvalidSpecError as error:
            forgotten = forgotten_status(body)
            return self._unusable(body, forgotten, forgotten, generation, error)
        status = self._recall(body, stored)
        structlog.contextvars.bind_contextvars(step=status.current_step_index, weight=status.current_weight)
        try:
            planned = self._planned(body, status, generation)
            if isinstance(planned, Unresolved):
                problem = SpecProblem(planned.message)
                held = decide_policy_unresolved(problem, status, generation, self.clock())
                return self._failed(body, stored, status, held)
            spec, status = planned.spec, planned.status
            spec = self.notification_defaults.applied(spec)
            router = router_for(spec.traffic_routing, self.kube, namespace, SideKinds.of(spec))
            provider = None
            analysed = in_force(spec, status)  # the watch window's metrics, in it
            if spec.analysis is not None:
                provider = self.providers.for_analysis(spec.analysis)
        except ValueError as error:  # what the CRD's schema could not catch, or an older CRD let through
            return self._unusable(body, stored, status, generation, error)
        now = self.clock()
        observed = self.observer.observe(body, spec, status, router, provider, analysed, now)
        observed = replace(observed, notified=self._notified(status, observed.uid))
        decision = decide(spec, status, observed, now)
        structlog.contextvars.bind_contextvars(
            step=decision.status.current_step_index, weight=decision.status.current_weight
        )
        explainer = provider if isinstance(provider, BreachExplainer) else None
        scene = _Scene(body, spec, analysed, router, explainer, status, stored)
        decision, finalized = self._apply_actions(scene, decision)
        if not finalized and SetFinalizer() in decision.actions:
            # Nothing is written before the finalizer that would return the traffic is there.
            return TickResult(None, WRITE_RETRY)
        observability.export(namespace, name, decision, observed.analysis)
        assert decision.wake_at is not None, "decide says when to look again"
        wake_after = decision.wake_at - self.clock()
        if not finalized:
            wake_after = min(wake_after, WRITE_RETRY)
        return TickResult(decision, max(wake_after, MIN_WAKEUP))

    def _planned(
        self, body: Mapping[str, Any], status: ModelRolloutStatus, generation: int
    ) -> PolicyPlan | Unresolved:
        """The spec the engine decides with, and the status it starts from: the rollout's own, or
        resolved with its policy (policy_plans.py), pinned in status."""
        own = body.get("spec") or {}
        spec = parse_spec(own)
        if spec.policy_ref is None:
            return PolicyPlan(spec, status)
        meta = body["metadata"]
        command = decode_command(meta.get("annotations"))
        tick = PolicyTick(own, spec, meta["namespace"], status, command, generation, self.clock())
        return plan_for(tick, self._live_policy(spec.policy_ref, meta["namespace"]))

    def _live_policy(self, ref: PolicyRef, namespace: str) -> LivePolicy | None:
        """The policy as the watch cache (or, on a miss, the API server) has it; None when absent."""
        try:
            if ref.kind is PolicyKind.CLUSTER:
                policy = self.kube.get_cluster_custom(API_GROUP, API_VERSION, ref.kind.plural, ref.name)
            else:
                policy = self.kube.get_custom(API_GROUP, API_VERSION, namespace, ref.kind.plural, ref.name)
        except NotFound:
            return None
        return LivePolicy(int(policy["metadata"].get("generation", 0)), policy.get("spec") or {})

    def _apply_actions(self, scene: _Scene, decided: Decision) -> tuple[Decision, bool]:
        """Applies the decision's actions in order (core/actions.py does the same in memory); returns
        the decision as settled by what the route write and the metric provider returned
        (core.after_write, after_evidence), and whether every finalizer patch
        took (a SetFinalizer that did not stops the tick: nothing is written before it)."""
        meta = scene.body["metadata"]
        decision, finalized = decided, True
        stored, index = scene.stored, 0
        while index < len(decision.actions):
            match decision.actions[index]:
                case SetFinalizer():
                    if not self._keep_finalizer(meta, wanted=True):
                        return decision, False
                case RemoveFinalizer():
                    finalized = self._keep_finalizer(meta, wanted=False)
                case WriteRoute(weight=weight, mirror_percent=mirror_percent):
                    written = self._write(scene.router, weight, mirror_percent, RolloutRef.of(meta))
                    if written is not None:  # None: not made (no route to write to)
                        decision = after_write(decision, written, self.clock())
                case CollectEvidence(reason=reason):
                    evidence = self._evidence(scene, reason)
                    if evidence is not None:
                        decision = after_evidence(decision, evidence)
                case PostEvents(events=events):
                    self._post_events(scene.body, events)
                case WriteStatus(status=status, may_wait=may_wait):
                    stored = self._write_status(scene.body, stored, status, may_wait=may_wait)
                    if may_wait:
                        observability.log_changes(scene.before, status)
                case StartGateChecks(gate=gate):
                    assert scene.spec is not None, "only a rollout with a spec has a gate"
                    self.gate_jobs.start(scene.body, scene.spec, gate)
                case DeleteGateJobs(gate=gate):
                    self.gate_jobs.delete(meta["namespace"], gate)
                case ScaleDownIncumbent() as scaled:
                    assert scene.spec is not None, "only a rollout with a spec has an incumbent"
                    self._scale_down_incumbent(scene.body, scene.spec.incumbent, scaled)
                case ClearCommand():
                    self.kube.patch_annotations(meta["namespace"], meta["name"], {COMMAND_ANNOTATION: None})
                case Notify() as notify:
                    targets = self.notification_defaults.targets(scene.body, notify.spec)
                    self.notifier.submit(notify, targets, scene.body)
                case ChangeGenerated(change=change):
                    assert scene.spec is not None, "only a one-edit rollout's spec generates a candidate"
                    event = GeneratedCandidate(self.kube, scene.body, scene.spec).apply(change)
                    self._post_events(scene.body, (event,))
                case RecordEnding(outcome=outcome):
                    observability.record_ending(
                        meta["namespace"], meta["name"], scene.before, decision.status, outcome
                    )
            index += 1
        return decision, finalized

    def _notified(self, status: ModelRolloutStatus, uid: str) -> frozenset[str]:
        """The keys of the pending notifications whose delivery ended (core/notifying.py drops them)."""
        pending = () if status.notifications is None else status.notifications.pending
        return self.notifier.finished(p.key(uid) for p in pending)

    def _evidence(self, scene: _Scene, reason: RollbackReason) -> BreachEvidence | None:
        """A metric breach's requests and pods, asked for once the traffic is back on the incumbent."""
        if scene.explainer is None or scene.analysed is None:
            return None
        evidence = scene.explainer.explain(scene.analysed, scene.body["metadata"]["namespace"], reason)
        log.info("breach evidence", traces=len(evidence.traces), pods=len(evidence.pods))
        return evidence

    def _scale_down_incumbent(
        self, body: Mapping[str, Any], incumbent: WorkloadRef, scaled: ScaleDownIncumbent
    ) -> None:
        error, namespace = None, body["metadata"]["namespace"]
        try:
            if scaled.member is None:
                self.kube.scale_side(namespace, incumbent, replicas=0)
            else:
                self.kube.scale_member(namespace, scaled.member, replicas=0)
            log.info("incumbent scaled down", kind=scaled.kind, workload=scaled.name)
        except (KubeError, ValueError) as failure:  # ValueError: a kind without a scale subresource
            error = str(failure)
            log.warning("incumbent not scaled down", kind=scaled.kind, workload=scaled.name, error=error)
        event = scale_down_event(scaled, error)
        self.kube.create_event(body, event.type.value, event.reason.value, event.message)

    def _keep_finalizer(self, meta: Mapping[str, Any], wanted: bool) -> bool:
        """Adds or removes the finalizer as the rollout needs it (core/actions.py); False when the
        rollout changed under the patch, to be tried again soon."""
        done = self.kube.set_finalizer(meta["namespace"], meta["name"], FINALIZER, wanted)
        if not done:
            log.info("the rollout changed while its finalizer was set; trying again", finalizer=FINALIZER)
        return done

    def _deleting(self, body: Mapping[str, Any]) -> TickResult:
        """A rollout being deleted (core.decide_deletion). One that cannot be used (its spec, its route)
        or is left alone (skip-reconcile) has nothing returned: its finalizer goes at once."""
        meta = body["metadata"]
        has_finalizer = FINALIZER in (meta.get("finalizers") or [])
        spec = router = route = None
        status = ModelRolloutStatus()
        try:
            spec = parse_spec(body.get("spec") or {})
            status = parse_status(body.get("status") or {})
            if spec.policy_ref is not None:  # spec.rollback.onDelete may be the pinned policy's
                pinned = PolicyTick(body["spec"], spec, meta["namespace"], status, None, 0, self.clock())
                spec = pinned_spec(pinned) or spec
            router = router_for(spec.traffic_routing, self.kube, meta["namespace"], SideKinds.of(spec))
        except ValueError as error:
            log.warning("deleting a rollout that cannot be used: removing its finalizer", error=str(error))
        generated = None
        if has_finalizer and router is not None and not skips_reconcile(meta.get("annotations")):
            route = router.read()
            if spec is not None and spec.candidate_patch is not None:
                generated = GeneratedCandidate(self.kube, body, spec).observe()
        decision = decide_generated_deletion(
            spec, status, route, has_finalizer, RolloutRef.of(meta), generated
        )
        scene = _Scene(body, spec, spec, router, None, status, status)
        decision, finalized = self._apply_actions(scene, decision)
        removed = any(isinstance(action, RemoveFinalizer) for action in decision.actions)
        if has_finalizer and not (finalized and removed):
            return TickResult(decision, WRITE_RETRY)
        return TickResult(decision, RESYNC)

    def _unusable(
        self,
        body: Mapping[str, Any],
        stored: ModelRolloutStatus,
        status: ModelRolloutStatus,
        generation: int,
        error: ValueError,
    ) -> TickResult:
        unusable = decide_unusable(SpecProblem(str(error)), status, generation, self.clock())
        return self._failed(body, stored, status, unusable)

    def _failed(
        self, body: Mapping[str, Any], stored: ModelRolloutStatus, status: ModelRolloutStatus, end: Decision
    ) -> TickResult:
        """Applies `end`, the route, Events and status of a rollout failed without the engine."""
        scene = _Scene(body, None, None, self._router_of(body), None, status, stored)
        end, _ = self._apply_actions(scene, end)
        observability.export(body["metadata"]["namespace"], body["metadata"]["name"], end, None)
        return TickResult(end, RESYNC)

    def _router_of(self, body: Mapping[str, Any]) -> TrafficRouter | None:
        """The rollout's router, if its spec names one that can be used."""
        try:
            spec = parse_spec(body.get("spec") or {})
            return router_for(
                spec.traffic_routing, self.kube, body["metadata"]["namespace"], SideKinds.of(spec)
            )
        except ValueError:
            return None

    def _write(
        self, router: TrafficRouter | None, weight: int, mirror_percent: int, owner: RolloutRef
    ) -> WriteResult | None:
        if router is None:
            log.warning("no route to return the traffic on: the spec names none that can be used")
            return None
        try:
            written: WriteResult = router.set_weights(weight, mirror_percent, owner)
        except Conflict as error:  # other writers changed the route under every attempt
            written = WriteFailed(error.message)
        log.info("weights set", candidate_weight=weight, mirror_percent=mirror_percent, written=repr(written))
        return written

    def _recall(self, body: Mapping[str, Any], written: ModelRolloutStatus) -> ModelRolloutStatus:
        """The status the tick starts from: the one held in memory, if what is stored is still the
        status it was held against (nobody else wrote one, the rollout was not recreated), else
        `written`."""
        meta = body["metadata"]
        key = (meta["namespace"], meta["name"])
        held = self._held.get(key)
        if held is not None and held.uid == meta.get("uid") and held.written == written:
            return held.status
        self._held.pop(key, None)
        return written

    def _write_status(
        self,
        body: Mapping[str, Any],
        stored: ModelRolloutStatus,
        status: ModelRolloutStatus,
        *,
        may_wait: bool = False,
    ) -> ModelRolloutStatus:
        """Writes `status` unless it is what is stored, or, with `may_wait`, unless core.may_hold lets
        it wait in memory; returns what is stored now."""
        meta = body["metadata"]
        key = (meta["namespace"], meta["name"])
        held = self._held.pop(key, None)
        if status == stored:
            return stored
        now = self.clock()
        held_since = None if held is None else held.since
        if may_wait and may_hold(stored, status, held_since, now, self.status_hold):
            self._held[key] = _Held(meta.get("uid"), stored, status, held_since or now)
            return stored
        self.kube.patch_status(meta["namespace"], meta["name"], status.to_patch())
        return status

    def _post_events(self, body: Mapping[str, Any], events: tuple[Event, ...]) -> None:
        """Every transition is logged; the Events as core.events_to_post combines them are posted."""
        for event in events:
            log.info("transition", reason=event.reason.value, type=event.type.value, detail=event.message)
        for event in events_to_post(events):
            self.kube.create_event(body, event.type.value, event.reason.value, event.message)
