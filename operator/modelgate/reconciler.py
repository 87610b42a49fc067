"""One reconcile tick of one ModelRollout: observe (Kubernetes, the metric provider), decide (the pure
engine), apply (weights first, then Events, then status). Synchronous: the operator runs it in a thread.

A tick is idempotent: weights are absolute, the status is written whole, a command is applied once
by its id. Should it fail half-way, the next tick observes what happened and carries on. A status
change that may wait (core/holding.py: a new evaluation with the same verdicts, a verified weight) is
held in memory and written with the next one that may not, or after core.holding.MAX_STATUS_HOLD.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from modelgate import API_GROUP, API_VERSION, PLURAL, observability
from modelgate.api import (
    InvalidSpecError,
    ModelRolloutSpec,
    ModelRolloutStatus,
    Phase,
    WorkloadRef,
    parse_spec,
    parse_status,
)
from modelgate.commands import COMMAND_ANNOTATION, decode_command, skips_reconcile
from modelgate.core import (
    AnalysisRun,
    Command,
    Decision,
    LiveRoute,
    Observations,
    ReadyReplicas,
    Reason,
    SpecProblem,
    UnreadableCommand,
    WriteFailed,
    WriteResult,
    analysis_due,
    decide,
    decide_unusable,
    events_to_post,
    may_hold,
    next_wakeup,
    settle_write,
)
from modelgate.core.deletion import FINALIZER, finalizer_wanted, weight_on_delete
from modelgate.core.evidence import with_evidence
from modelgate.core.holding import MAX_STATUS_HOLD
from modelgate.core.query_check import check_due
from modelgate.core.schedule import MIN_WAKEUP, RESYNC, WRITE_RETRY
from modelgate.core.stage import watching
from modelgate.core.watch_window import in_force
from modelgate.kube import Conflict, DeploymentAvailability, Kube, KubeError, NotFound
from modelgate.kube.check_pod_policy import CheckPodPolicy
from modelgate.kube.gate_jobs import EVALUATOR_IMAGE_ENV, GateJobs
from modelgate.metrics import AnalysisPlan, BreachExplainer, MetricProvider, MetricProviders
from modelgate.routers import SideKinds, TrafficRouter, backend_service, router_for

log = structlog.get_logger("modelgate.reconciler")
Clock = Callable[[], datetime]


def _rolls_back(decision: Decision) -> bool:
    return decision.outcome is not None and decision.outcome.phase is Phase.ROLLED_BACK


def utc_now() -> datetime:
    return datetime.now(UTC)


class RolloutGone(Exception):
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
class TickResult:
    decision: Decision | None
    wake_after: timedelta


def _forgotten_status(body: Mapping[str, Any]) -> ModelRolloutStatus:
    """What stands in for a status that cannot be read (it is no longer the operator's memory): empty
    but for the candidate it belongs to, so that the Failed it gets holds, the route left as it is,
    until the spec changes, instead of starting over from step 0 at the next tick."""
    try:
        candidate: str | None = parse_spec(body.get("spec") or {}).candidate.identity
    except ValueError:
        candidate = None
    return ModelRolloutStatus(rollout_candidate=candidate)


class Reconciler:
    def __init__(
        self,
        kube: Kube,
        clock: Clock = utc_now,
        evaluator_image: str | None = None,
        status_hold: timedelta = MAX_STATUS_HOLD,
    ) -> None:
        self.kube = kube
        self.clock = clock
        self.status_hold = status_hold  # how long a status change may wait in memory (core/holding.py)
        self.providers = MetricProviders(kube)
        self.gate_jobs = GateJobs(
            kube,
            evaluator_image or os.environ.get(EVALUATOR_IMAGE_ENV),
            CheckPodPolicy.from_env(os.environ),
            backend_service,
        )
        # Per rollout; each is touched only by its rollout's tick, one at a time.
        self._held: dict[tuple[str, str], _Held] = {}

    def forget(self, namespace: str, name: str) -> None:
        """The rollout is gone: whatever of its status was held goes with it."""
        self._held.pop((namespace, name), None)

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
                return self._tick(body, namespace, name)
        finally:
            structlog.contextvars.unbind_contextvars("namespace", "rollout", "step", "weight")

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
            forgotten = _forgotten_status(body)
            return self._unusable(body, forgotten, forgotten, generation, error)
        status = self._recall(body, stored)
        structlog.contextvars.bind_contextvars(step=status.current_step_index, weight=status.current_weight)
        try:
            spec = parse_spec(body.get("spec") or {})
            router = router_for(spec.traffic_routing, self.kube, namespace, SideKinds.of(spec))
            provider = None
            analysed = in_force(spec, status)  # the watch window's metrics, in it
            if spec.analysis is not None:
                provider = self.providers.for_analysis(spec.analysis)
        except ValueError as error:  # what the CRD's schema could not catch, or an older CRD let through
            return self._unusable(body, stored, status, generation, error)
        command = decode_command(meta.get("annotations"))
        plan, query_problem = self._plan(provider, analysed, namespace)

        now = self.clock()
        route = router.read()
        candidate = spec.candidate
        availability = self._side_availability(namespace, candidate, "spec.candidate.inferencePool")
        ready = None
        if spec.capacity is not None and spec.capacity.enforce:
            ready = ReadyReplicas(
                candidate=self.kube.side_ready_replicas(namespace, candidate.kind, candidate.name),
                incumbent=self.kube.side_ready_replicas(namespace, spec.incumbent.kind, spec.incumbent.name),
            )
        # In the watch window a rollback sends everything to the incumbent, which must be able to serve it.
        incumbent = (
            self._side_availability(namespace, spec.incumbent, "spec.incumbent.inferencePool")
            if watching(status)
            else None
        )
        analysis: AnalysisRun | None = None
        # Due even when the route does not yet carry the step's weight (an operator killed between a
        # step's status and its weight, or between a rollback's 0 and its status): judged first, a
        # candidate that breached is never given its traffic back.
        due = isinstance(route, LiveRoute) and analysis_due(spec, status, now)
        if provider is not None and due:
            analysis = self._run(provider, plan, analysed, query_problem)
        check = None
        if provider is not None and check_due(analysed, status, now):
            # The same queries: this tick's analysis run, where there is one, is the check.
            check = analysis or self._run(provider, plan, analysed, query_problem)
        gate_checks = {}
        if status.phase is Phase.GATING and status.gate is not None:
            gate_checks = self.gate_jobs.observe(namespace, spec, status.gate)
        observed = Observations(
            rollout=name,
            uid=str(meta.get("uid") or ""),
            gate_checks=gate_checks,
            generation=generation,
            candidate_available=availability.available,
            candidate_message=availability.message,
            route=route,
            analysis=analysis,
            command=command,
            ready_replicas=ready,
            incumbent_available=None if incumbent is None else incumbent.available,
            incumbent_message="" if incumbent is None else incumbent.message,
            query_problem=query_problem,
            analysis_check=check,
        )
        decision = decide(spec, status, observed, now)
        structlog.contextvars.bind_contextvars(
            step=decision.status.current_step_index, weight=decision.status.current_weight
        )
        wanted = finalizer_wanted(spec, decision.status)
        has = FINALIZER in (body["metadata"].get("finalizers") or [])
        if wanted and not has and not self._keep_finalizer(namespace, name, wanted):
            # Nothing is written before the finalizer that would return the traffic is there.
            return TickResult(None, WRITE_RETRY)
        if decision.weight is not None:
            if not _rolls_back(decision):
                # The step first, then its weight: an operator that dies in between finds the new
                # step in status and writes its weight, rather than the previous step's back.
                stored = self._write_status(body, stored, decision.status)
            # A rollback's weight goes first: it must reach the route before anything else.
            written = self._write(router, decision.weight, decision.mirror_percent)
            decision = settle_write(status, decision, written, self.clock(), generation)
        if _rolls_back(decision) and isinstance(provider, BreachExplainer):
            decision = self._with_evidence(provider, analysed, namespace, decision)
        self._apply(body, status, stored, decision)
        self._run_gate_jobs(body, spec, status, decision.status)
        if decision.scale_down_incumbent:
            self._scale_down_incumbent(body, spec.incumbent.name)
        self._clear_handled_command(namespace, name, command, decision.status)
        observability.export(namespace, name, decision, analysis)
        # Timed from the decision's `now`, less the time the tick has taken since.
        wake_after = next_wakeup(spec, decision.status, now) - (self.clock() - now)
        if has and not wanted and not self._keep_finalizer(namespace, name, wanted):
            wake_after = min(wake_after, WRITE_RETRY)
        return TickResult(decision, max(wake_after, MIN_WAKEUP))

    @staticmethod
    def _plan(
        provider: MetricProvider | None, spec: ModelRolloutSpec, namespace: str
    ) -> tuple[AnalysisPlan | None, SpecProblem | None]:
        """The analysis's queries, and what keeps some or all of them from being built (naming the
        field): the engine decides what that means for the rollout."""
        if provider is None:
            return None, None
        try:
            plan = provider.plan(spec, namespace)
        except ValueError as error:
            return None, SpecProblem(str(error))
        first = next(iter(plan.unbuildable.values()), None)
        return plan, None if first is None else SpecProblem(first)

    def _run(
        self,
        provider: MetricProvider,
        plan: AnalysisPlan | None,
        spec: ModelRolloutSpec,
        problem: SpecProblem | None,
    ) -> AnalysisRun:
        """The plan's queries; without a plan, every metric an Error naming why (a Prometheus error's
        shape: held, then paused or rolled back as spec.rollback says)."""
        if plan is not None:
            return provider.run(plan, self.clock())
        assert spec.analysis is not None and problem is not None
        metrics = {metric.name: "" for metric in spec.analysis.metrics}
        return AnalysisRun.failed(metrics, self.clock(), f"the query cannot be built: {problem.message}")

    def _run_gate_jobs(
        self,
        body: Mapping[str, Any],
        spec: ModelRolloutSpec,
        before: ModelRolloutStatus,
        after: ModelRolloutStatus,
    ) -> None:
        """After the status that names them is written: the gate's Jobs are started while it runs, and
        deleted once it has decided (their evidence is in status)."""
        gate = after.gate
        if gate is None:
            return
        if after.phase is Phase.GATING:
            self.gate_jobs.start(body, spec, gate)
        elif before.phase is Phase.GATING and gate.decision is not None:
            self.gate_jobs.delete(body["metadata"]["namespace"], gate)

    def _with_evidence(
        self, provider: BreachExplainer, spec: ModelRolloutSpec, namespace: str, decision: Decision
    ) -> Decision:
        """A metric breach's requests and pods, asked for once the traffic is back on the incumbent."""
        reason = decision.status.rollback_reason
        if reason is None or reason.metric is None:
            return decision
        evidence = provider.explain(spec, namespace, reason)
        log.info("breach evidence", traces=len(evidence.traces), pods=len(evidence.pods))
        return with_evidence(decision, evidence.traces, evidence.pods)

    def _side_availability(
        self, namespace: str, side: WorkloadRef, pool_field: str
    ) -> DeploymentAvailability:
        if side.kind == "Deployment":
            return self.kube.deployment_availability(namespace, side.name)
        return self.kube.pool_availability(namespace, side.name, pool_field)

    def _scale_down_incumbent(self, body: Mapping[str, Any], deployment: str) -> None:
        """spec.watch.scaleDownIncumbent, once the window has passed: tried once; a failure (e.g. the
        chart did not grant deployments/scale) is a Warning Event, and the rollout stays Succeeded."""
        namespace = body["metadata"]["namespace"]
        try:
            self.kube.scale_deployment(namespace, deployment, replicas=0)
        except KubeError as error:
            message = f"could not scale the incumbent Deployment {deployment} to 0: {error}"
            log.warning("incumbent not scaled down", deployment=deployment, error=str(error))
            self.kube.create_event(body, "Warning", Reason.SCALE_DOWN_FAILED.value, message)
            return
        message = f"the watch window passed: incumbent Deployment {deployment} scaled to 0 replicas"
        log.info("incumbent scaled down", deployment=deployment)
        self.kube.create_event(body, "Normal", Reason.SCALED_DOWN.value, message)

    def _keep_finalizer(self, namespace: str, name: str, wanted: bool) -> bool:
        """Adds or removes the finalizer as the rollout needs it (core/deletion.py); False when the
        rollout changed under the patch, to be tried again soon."""
        done = self.kube.set_finalizer(namespace, name, FINALIZER, wanted)
        if not done:
            log.info("the rollout changed while its finalizer was set; trying again", finalizer=FINALIZER)
        return done

    def _deleting(self, body: Mapping[str, Any]) -> TickResult:
        """A rollout being deleted: with spec.rollback.onDelete ReturnTraffic, the candidate's weight
        goes to 0 (verified) before the finalizer is removed. A rollout that cannot be used (its spec,
        its route) or is left alone (skip-reconcile) has nothing returned: its finalizer goes at once."""
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        if FINALIZER not in (meta.get("finalizers") or []):
            return TickResult(None, RESYNC)  # not ours to hold: it goes when its other finalizers do
        spec = router = route = None
        status = ModelRolloutStatus()
        try:
            spec = parse_spec(body.get("spec") or {})
            status = parse_status(body.get("status") or {})
            router = router_for(spec.traffic_routing, self.kube, namespace, SideKinds.of(spec))
        except ValueError as error:
            log.warning("deleting a rollout that cannot be used: removing its finalizer", error=str(error))
        if router is not None and not skips_reconcile(meta.get("annotations")):
            route = router.read()
        weight = weight_on_delete(spec, status, route)
        if router is not None and weight is not None:
            written = self._write(router, weight, mirror_percent=0)
            returned = isinstance(written, LiveRoute) and (
                written.candidate_weight,
                written.mirror_percent,
            ) == (weight, 0)
            if not returned:
                message = f"deleting: the candidate's weight is not {weight} yet ({written}); trying again"
                self.kube.create_event(body, "Warning", Reason.WEIGHT_NOT_APPLIED.value, message)
                return TickResult(None, WRITE_RETRY)
            message = f"deleting: the candidate's weight is {weight}, the incumbent takes all traffic"
            log.info("traffic returned", detail=message)
            self.kube.create_event(body, "Normal", Reason.TRAFFIC_RETURNED.value, message)
        if not self._keep_finalizer(namespace, name, wanted=False):
            return TickResult(None, WRITE_RETRY)
        log.info("finalizer removed; the rollout goes", finalizer=FINALIZER)
        return TickResult(None, RESYNC)

    def _unusable(
        self,
        body: Mapping[str, Any],
        stored: ModelRolloutStatus,
        status: ModelRolloutStatus,
        generation: int,
        error: ValueError,
    ) -> TickResult:
        unusable = decide_unusable(SpecProblem(str(error)), status, generation, self.clock())
        router = self._router_of(body)
        if unusable.weight is not None and router is not None:
            written = self._write(router, unusable.weight, mirror_percent=0)
            unusable = settle_write(status, unusable, written, self.clock(), generation)
        elif unusable.weight is not None:
            log.warning("no route to return the traffic on: the spec names none that can be used")
        self._apply(body, status, stored, unusable)
        observability.export(body["metadata"]["namespace"], body["metadata"]["name"], unusable, None)
        return TickResult(unusable, RESYNC)

    def _router_of(self, body: Mapping[str, Any]) -> TrafficRouter | None:
        """The rollout's router, if its spec names one that can be used."""
        try:
            spec = parse_spec(body.get("spec") or {})
            return router_for(
                spec.traffic_routing, self.kube, body["metadata"]["namespace"], SideKinds.of(spec)
            )
        except ValueError:
            return None

    def _write(self, router: TrafficRouter, weight: int, mirror_percent: int) -> WriteResult:
        try:
            written: WriteResult = router.set_weights(weight, mirror_percent)
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

    def _apply(
        self,
        body: Mapping[str, Any],
        before: ModelRolloutStatus,
        stored: ModelRolloutStatus,
        decision: Decision,
    ) -> None:
        """Events, then the status (unless `stored` already is it); `before` is the tick's start."""
        for event in decision.events:
            log.info("transition", reason=event.reason.value, type=event.type.value, detail=event.message)
        for event in events_to_post(decision.events):
            self.kube.create_event(body, event.type.value, event.reason.value, event.message)
        self._write_status(body, stored, decision.status, may_wait=True)
        if decision.status.phase != before.phase:
            log.info(
                "phase changed",
                phase=decision.status.phase,
                previous=before.phase,
                message=decision.status.message,
            )
        elif decision.status.message != before.message:
            # What it now waits for (a candidate that is not Available, a weight not yet live): a
            # rollout that holds would otherwise say so only in its status.
            log.info("status message changed", phase=decision.status.phase, message=decision.status.message)
        if decision.outcome is not None:
            reason = decision.status.rollback_reason
            # A promotion is the expected end: info; a rollback or failure is what operators alert on.
            ended = log.info if decision.outcome.phase == Phase.SUCCEEDED else log.warning
            ended(
                "rollout ended",
                phase=decision.outcome.phase,
                reason=decision.outcome.reason.value,
                metric=reason.metric if reason else None,
                value=reason.value if reason else None,
                threshold=reason.threshold if reason else None,
                query=reason.query if reason else None,
                detail=decision.status.message,
                step=before.current_step_index,
                weight_before=before.current_weight,
            )

    def _clear_handled_command(
        self,
        namespace: str,
        name: str,
        command: Command | UnreadableCommand | None,
        status: ModelRolloutStatus,
    ) -> None:
        handled = status.last_command
        if command is not None and handled is not None and handled.id == command.id:
            self.kube.patch_annotations(namespace, name, {COMMAND_ANNOTATION: None})
