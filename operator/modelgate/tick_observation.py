"""What one tick observes before it decides; it reads, never writes.

What one tick observes before it decides: the live route, each side's availability (and with
spec.capacity.enforce, Ready replicas), the analysis and the query check when due, the gate's check
Jobs, the command annotation and the finalizer. Reads only: whatever is written is an action of the
Decision (core/actions.py), applied by the reconciler."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase, RolloutRef, WorkloadRef
from modelgate.commands import decode_command
from modelgate.core import (
    AnalysisRun,
    LiveRoute,
    MemberAvailability,
    Observations,
    ReadyReplicas,
    RouteClaim,
    RouteProblem,
    SpecProblem,
    analysis_due,
)
from modelgate.core.actions import FINALIZER
from modelgate.core.judging import check_due
from modelgate.core.tick import watching
from modelgate.kube import Kube, NotFound
from modelgate.kube.gate_jobs import GateJobs
from modelgate.metrics import AnalysisPlan, MetricProvider
from modelgate.routers import TrafficRouter
from modelgate.routers.generated_candidate import GeneratedCandidate


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
        availability = self.kube.side_availability(namespace, candidate, f"spec.candidate.{candidate.field}")
        ready = self._ready_replicas(namespace, spec) if spec.capacity and spec.capacity.enforce else None
        # In the watch window a rollback sends everything to the incumbent, which must be able to serve it.
        incumbent = (
            self.kube.side_availability(namespace, spec.incumbent, f"spec.incumbent.{spec.incumbent.field}")
            if watching(status)
            else None
        )
        incumbent_members = self._members(namespace, spec.incumbent, "incumbent") if incumbent else ()
        analysis, check = None, None
        if provider is not None:
            analysis, check = self._runs(provider, (plan, query_problem), spec, analysed, status, route, now)
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
            candidate_members=self._members(namespace, candidate, "candidate"),
            incumbent_members=incumbent_members,
            query_problem=query_problem,
            analysis_check=check,
            has_finalizer=FINALIZER in (meta.get("finalizers") or []),
            route_claim=self._route_claim(route, str(meta.get("uid") or "")),
            generated=None
            if spec.candidate_patch is None
            else GeneratedCandidate(self.kube, body, spec).observe(),
        )

    def _runs(
        self,
        provider: MetricProvider,
        planned: tuple[AnalysisPlan | None, SpecProblem | None],
        spec: ModelRolloutSpec,
        analysed: ModelRolloutSpec,
        status: ModelRolloutStatus,
        route: LiveRoute | RouteProblem,
        now: datetime,
    ) -> tuple[AnalysisRun | None, AnalysisRun | None]:
        """This tick's analysis run and query check, each when due."""
        plan, query_problem = planned
        analysis = None
        # Due even when the route does not yet carry the step's weight (an operator killed between a
        # step's status and its weight, or between a rollback's 0 and its status): judged first, a
        # candidate that breached is never given its traffic back.
        if isinstance(route, LiveRoute) and analysis_due(spec, status, now):
            analysis = self._run(provider, plan, analysed, query_problem)
        check = None
        if check_due(analysed, status, now):
            # The same queries: this tick's analysis run, where there is one, is the check.
            check = analysis or self._run(provider, plan, analysed, query_problem)
        return analysis, check

    def _ready_replicas(self, namespace: str, spec: ModelRolloutSpec) -> ReadyReplicas:
        return ReadyReplicas(
            candidate=self._side_ready(namespace, spec.candidate),
            incumbent=self._side_ready(namespace, spec.incumbent),
        )

    def _side_ready(self, namespace: str, side: WorkloadRef) -> int:
        """A side's Ready replicas; a group's are its members' (the target may select them all)."""
        if side.members is None:
            return self.kube.side_ready_replicas(namespace, side)
        return sum(self.kube.member_ready_replicas(namespace, member) for member in side.members)

    def _members(self, namespace: str, side: WorkloadRef, name: str) -> tuple[MemberAvailability, ...]:
        """Each member of a grouped side, as available as it reads now."""
        read = []
        for index, member in enumerate(side.members or ()):
            field = f"spec.{name}.members[{index}]"
            found = self.kube.member_availability(namespace, member, field)
            read.append(MemberAvailability(member.role, field, found.available, found.message))
        return tuple(read)

    def _route_claim(self, route: LiveRoute | RouteProblem, uid: str) -> RouteClaim | None:
        """Another rollout's claim on the rule, a live owner's first (core/holds.py)."""
        if not isinstance(route, LiveRoute):
            return None
        claims = [
            RouteClaim(owner, self._ended(owner))
            for owner in sorted(route.owners, key=str)
            if owner.uid != uid
        ]
        return min(claims, key=lambda claim: claim.owner_ended, default=None)

    def _ended(self, owner: RolloutRef) -> bool:
        """Whether the owner of a claim has ended: Succeeded, RolledBack or Failed, deleted, or a new
        rollout under its name."""
        try:
            body = self.kube.get_custom(API_GROUP, API_VERSION, owner.namespace, PLURAL, owner.name)
        except NotFound:
            return True
        if body["metadata"].get("uid") != owner.uid:
            return True
        phase = (body.get("status") or {}).get("phase")
        return phase in {p.value for p in Phase if p.ended}

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
