"""What one tick observes before it decides: the live route, each side's availability (and with
spec.capacity.enforce, Ready replicas), the analysis and the query check when due, the gate's check
Jobs, the command annotation and the finalizer. Reads only: whatever is written is an action of the
Decision (core/actions.py), applied by the reconciler."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase, WorkloadRef
from modelgate.commands import decode_command
from modelgate.core import AnalysisRun, LiveRoute, Observations, ReadyReplicas, SpecProblem, analysis_due
from modelgate.core.deletion import FINALIZER
from modelgate.core.query_check import check_due
from modelgate.core.stage import watching
from modelgate.kube import DeploymentAvailability, Kube
from modelgate.kube.gate_jobs import GateJobs
from modelgate.metrics import AnalysisPlan, MetricProvider
from modelgate.routers import TrafficRouter


class TickObserver:
    def __init__(self, kube: Kube, gate_jobs: GateJobs, clock: Callable[[], datetime]) -> None:
        self.kube = kube
        self.gate_jobs = gate_jobs
        self.clock = clock

    def observe(
        self,
        body: Mapping[str, Any],
        spec: ModelRolloutSpec,
        status: ModelRolloutStatus,
        router: TrafficRouter,
        provider: MetricProvider | None,
        analysed: ModelRolloutSpec,
        now: datetime,
    ) -> Observations:
        meta = body["metadata"]
        namespace = meta["namespace"]
        plan, query_problem = self._plan(provider, analysed, namespace)
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
            gate_checks = self.gate_jobs.observe(namespace, meta["name"], spec, status.gate)
        return Observations(
            rollout=meta["name"],
            namespace=namespace,
            uid=str(meta.get("uid") or ""),
            gate_checks=gate_checks,
            generation=int(meta.get("generation", 0)),
            candidate_available=availability.available,
            candidate_message=availability.message,
            route=route,
            analysis=analysis,
            command=decode_command(meta.get("annotations")),
            ready_replicas=ready,
            incumbent_available=None if incumbent is None else incumbent.available,
            incumbent_message="" if incumbent is None else incumbent.message,
            query_problem=query_problem,
            analysis_check=check,
            has_finalizer=FINALIZER in (meta.get("finalizers") or []),
        )

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

    def _side_availability(
        self, namespace: str, side: WorkloadRef, pool_field: str
    ) -> DeploymentAvailability:
        if side.kind == "Deployment":
            return self.kube.deployment_availability(namespace, side.name)
        return self.kube.pool_availability(namespace, side.name, pool_field)
