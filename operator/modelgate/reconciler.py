"""One reconcile tick of one ModelRollout: observe (Kubernetes, Prometheus), decide (pure engine),
apply (weights first, then events, then status). Synchronous: the operator runs it in a thread.

A tick is idempotent: weights are absolute, the status is written whole, a command is applied once
by its id. Should it fail half-way, the next tick observes what happened and carries on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate import observability as metrics
from modelgate.api import InvalidSpecError, ModelRolloutSpec, ModelRolloutStatus, Phase, parse_spec
from modelgate.commands import COMMAND_ANNOTATION, decode_command, skips_reconcile
from modelgate.core import Decision, Observations, analysis_due, decide, next_wakeup
from modelgate.core.model import AnalysisRun, Command, LiveRoute, RouteProblem
from modelgate.core.schedule import RESYNC
from modelgate.kube import Kube, KubeError, NotFound
from modelgate.metrics.analysis import analysis_queries, failed_analysis, run_analysis
from modelgate.metrics.context import QueryContextError
from modelgate.metrics.prometheus import PrometheusProvider
from modelgate.metrics.template import TemplateError
from modelgate.routers import router_for

log = structlog.get_logger("modelgate.reconciler")
Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class RolloutGone(Exception):
    """The ModelRollout was deleted; its loop ends."""


@dataclass(frozen=True)
class TickResult:
    decision: Decision | None
    wake_after: timedelta


class Reconciler:
    def __init__(self, kube: Kube, clock: Clock = utc_now) -> None:
        self.kube = kube
        self.clock = clock
        self._providers: dict[tuple[str, float, str | None], PrometheusProvider] = {}

    def tick_by_name(self, namespace: str, name: str) -> TickResult:
        """Reads the rollout fresh (never a cached copy that may predate our own last write).
        Raises RolloutGone when it no longer exists."""
        try:
            body = self.kube.get_custom(API_GROUP, API_VERSION, namespace, PLURAL, name)
        except NotFound:
            raise RolloutGone(f"ModelRollout {namespace}/{name} no longer exists") from None
        return self.tick(body)

    def tick(self, body: Mapping[str, Any]) -> TickResult:
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        structlog.contextvars.bind_contextvars(namespace=namespace, rollout=name)
        try:
            with metrics.RECONCILE_SECONDS.time():
                return self._tick(body, namespace, name)
        finally:
            structlog.contextvars.unbind_contextvars("namespace", "rollout", "step", "weight")

    def _tick(self, body: Mapping[str, Any], namespace: str, name: str) -> TickResult:
        if skips_reconcile(body["metadata"].get("annotations")):
            log.info("skip-reconcile is set; leaving the rollout alone")
            return TickResult(None, RESYNC)
        status = ModelRolloutStatus.model_validate(body.get("status") or {})
        structlog.contextvars.bind_contextvars(step=status.current_step_index, weight=status.current_weight)
        try:
            spec = parse_spec(body.get("spec") or {})
            command = decode_command(body["metadata"].get("annotations"))
            queries = analysis_queries(spec, namespace) if spec.analysis is not None else None
        except (InvalidSpecError, ValueError, QueryContextError, TemplateError) as error:
            self._report_unusable(body, status, str(error))
            return TickResult(None, RESYNC)

        now = self.clock()
        router = router_for(spec.traffic_routing, self.kube, namespace)
        route = router.read()
        availability = self.kube.deployment_availability(namespace, spec.candidate.deployment)
        analysis: AnalysisRun | None = None
        if queries is not None and isinstance(route, LiveRoute) and analysis_due(spec, status, now):
            try:
                provider = self._provider(spec, namespace)
            except (KubeError, ValueError) as error:  # unreadable Secret, or a malformed token
                # Like an unreachable Prometheus: held, then paused or rolled back per policy.
                analysis = failed_analysis(
                    queries, self.clock(), f"cannot read the Prometheus token: {error}"
                )
            else:
                analysis = run_analysis(provider, queries, self.clock())
        observed = Observations(
            generation=int(body["metadata"].get("generation", 0)),
            candidate_available=availability.available,
            candidate_message=availability.message,
            route=route,
            analysis=analysis,
            command=command,
        )
        decision = decide(spec, status, observed, now)
        structlog.contextvars.bind_contextvars(
            step=decision.status.current_step_index, weight=decision.status.current_weight
        )
        self._apply(body, status, decision, router_set=router.set_weights)
        self._clear_handled_command(namespace, name, command, decision.status)
        self._export(namespace, name, decision, analysis)
        return TickResult(decision, next_wakeup(spec, decision.status, self.clock()))

    def _apply(
        self,
        body: Mapping[str, Any],
        before: ModelRolloutStatus,
        decision: Decision,
        router_set: Callable[[int], LiveRoute | RouteProblem],
    ) -> None:
        meta = body["metadata"]
        change = decision.weight_change
        if change is not None:
            # Weights first: a rollback must reach the route before anything else is written.
            live = router_set(change.candidate_weight)
            log.info("weights set", candidate_weight=change.candidate_weight, live=repr(live))
        for event in decision.events:
            self.kube.create_event(body, event.type.value, event.reason, event.message)
            log.info("transition", reason=event.reason, type=event.type.value, detail=event.message)
        if decision.status != before:
            self.kube.patch_status(meta["namespace"], meta["name"], decision.status.to_patch())
        if decision.status.phase != before.phase:
            log.info(
                "phase changed",
                phase=decision.status.phase,
                previous=before.phase,
                message=decision.status.message,
            )
        if decision.status.phase is Phase.ROLLED_BACK and before.phase is not Phase.ROLLED_BACK:
            reason = decision.status.rollback_reason
            log.warning(
                "rolled back",
                metric=reason.metric if reason else None,
                value=reason.value if reason else None,
                threshold=reason.threshold if reason else None,
                query=reason.query if reason else None,
                reason=reason.message if reason else None,
                step=before.current_step_index,
                weight_before=before.current_weight,
            )

    def _clear_handled_command(
        self, namespace: str, name: str, command: Command | None, status: ModelRolloutStatus
    ) -> None:
        if command is not None and status.last_command_id == command.id:
            self.kube.patch_annotations(namespace, name, {COMMAND_ANNOTATION: None})

    def _report_unusable(self, body: Mapping[str, Any], status: ModelRolloutStatus, problem: str) -> None:
        """What the CRD's schema could not catch (or an older CRD let through) ends the rollout."""
        meta = body["metadata"]
        if status.phase is Phase.FAILED and status.message == problem:
            return
        failed = status.model_copy(update={"phase": Phase.FAILED, "message": problem})
        self.kube.create_event(body, "Warning", "InvalidSpec", problem)
        self.kube.patch_status(meta["namespace"], meta["name"], failed.to_patch())
        log.error("rollout cannot work as specified", problem=problem)

    def _provider(self, spec: ModelRolloutSpec, namespace: str) -> PrometheusProvider:
        assert spec.analysis is not None
        prometheus = spec.analysis.prometheus
        token = None
        if prometheus.bearer_token_secret_ref is not None:
            ref = prometheus.bearer_token_secret_ref
            token = self.kube.read_secret_key(namespace, ref.name, ref.key)
        key = (prometheus.address, prometheus.timeout_timedelta.total_seconds(), token)
        if key not in self._providers:
            self._providers[key] = PrometheusProvider(key[0], timeout=key[1], bearer_token=token)
        return self._providers[key]

    def _export(self, namespace: str, name: str, decision: Decision, analysis: AnalysisRun | None) -> None:
        status = decision.status
        for phase in metrics.PHASES:
            metrics.ROLLOUT_PHASE.labels(namespace, name, phase).set(1 if status.phase == phase else 0)
        metrics.ROLLOUT_WEIGHT.labels(namespace, name).set(status.current_weight)
        metrics.ROLLOUT_STEP.labels(namespace, name).set(status.current_step_index)
        if analysis is not None:
            for record in status.analysis:
                metrics.METRIC_VERDICT.labels(namespace, name, record.name, record.verdict).inc()
                if record.value is not None:
                    metrics.METRIC_VALUE.labels(namespace, name, record.name).set(record.value)
            errors = sum(1 for q in analysis.metrics.values() if q.result.is_error)
            if errors:
                metrics.QUERY_ERRORS.labels(namespace, name).inc(errors)
        # Transitions are counted from the events, which carry the reason.
        for event in decision.events:
            if event.reason == "RolloutSucceeded":
                metrics.PROMOTIONS.labels(namespace, name).inc()
            elif event.reason == "RolledBack":
                metrics.ROLLBACKS.labels(namespace, name, event.message.split(":", 1)[0]).inc()
