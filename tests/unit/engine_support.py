"""Builders and a tick-by-tick simulator for testing the pure engine (`modelgate.core.decide`).

Nothing here sleeps or touches a cluster: time is a fake clock handed to `decide` as `now`, and each
decision's actions are applied to an in-memory world (core/actions.py), whose route takes each write
the way a router would: the tests read what the operator's actions did, not what a decision says.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from modelgate.api import (
    AnalysisSpec,
    MetricSpec,
    ModelRolloutSpec,
    ModelRolloutStatus,
    Phase,
    RolloutRef,
    Step,
)
from modelgate.core import (
    AnalysisRun,
    Applied,
    Command,
    CommandAction,
    Decision,
    Event,
    LiveRoute,
    MemberAvailability,
    MetricQuery,
    Observations,
    QueryResult,
    ReadyReplicas,
    Reason,
    RouteClaim,
    RouteProblem,
    Router,
    SideBuckets,
    SideTotals,
    SpecProblem,
    UnreadableCommand,
    World,
    analysis_due,
    apply,
    decide,
)
from modelgate.core import Outcome as DecisionOutcome
from modelgate.core.endings import in_force
from modelgate.core.judging import check_due
from modelgate.core.model import Action, PostEvents, RecordEnding, WriteRoute
from modelgate.core.notifying import BreachEvidence

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
INTERVAL = timedelta(seconds=30)
ENOUGH_REQUESTS = 1000.0
TOO_FEW_REQUESTS = 3.0

# The contract's seed metrics, plus one with only a lower bound.
ERROR_RATE = MetricSpec(name="error-rate", preset="errorRate", max=0.01)
P99_LATENCY = MetricSpec(name="p99-latency", preset="latencyP99", max=2.5)
THROUGHPUT = MetricSpec(name="throughput", query="sum(rate(x[1m]))", min=5.0)
DEFAULT_METRICS = (ERROR_RATE, P99_LATENCY)


# -- spec builders ----------------------------------------------------------------------------------
def weight(value: int) -> Step:
    return Step(set_weight=value)


def timed_pause(duration: str) -> Step:
    return Step.model_validate({"pause": {"duration": duration}})


def indefinite_pause() -> Step:
    return Step.model_validate({"pause": {}})


def mirror(percent: int, duration: str) -> Step:
    return Step.model_validate({"mirror": {"percent": percent, "duration": duration}})


def analysis_spec(
    metrics: Iterable[MetricSpec] = DEFAULT_METRICS, *, interval: str = "30s", min_requests: int = 50
) -> AnalysisSpec:
    return AnalysisSpec.model_validate(
        {
            "interval": interval,
            "minRequests": min_requests,
            "prometheus": {"address": "http://prometheus.monitoring:9090"},
            "metrics": [m.model_dump(by_alias=True, exclude_none=True) for m in metrics],
        }
    )


def make_spec(
    *steps: Step,
    analysis: AnalysisSpec | None = None,
    with_analysis: bool = True,
    candidate: str = "chat-v2",
    on_prometheus_error: str = "pause",
    max_consecutive_errors: int = 3,
) -> ModelRolloutSpec:
    """A valid spec; `with_analysis` adds the default metrics unless `analysis` is given."""
    if analysis is None and with_analysis:
        analysis = analysis_spec()
    document: dict[str, Any] = {
        "incumbent": {"deployment": "chat-v1"},
        "candidate": {"deployment": candidate},
        "trafficRouting": {
            "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}
        },
        "steps": [s.model_dump(by_alias=True, exclude_none=True) for s in (steps or (weight(100),))],
        "rollback": {
            "onPrometheusError": on_prometheus_error,
            "maxConsecutiveErrors": max_consecutive_errors,
        },
    }
    if analysis is not None:
        document["analysis"] = analysis.model_dump(by_alias=True, exclude_none=True)
    return ModelRolloutSpec.model_validate(document)


def with_candidate(spec: ModelRolloutSpec, candidate: str) -> ModelRolloutSpec:
    return spec.model_copy(update={"candidate": spec.candidate.model_copy(update={"deployment": candidate})})


# -- observations -----------------------------------------------------------------------------------
def live(candidate_weight: int) -> LiveRoute:
    return LiveRoute(incumbent_weight=100 - candidate_weight, candidate_weight=candidate_weight)


ROUTE_NOT_FOUND = RouteProblem(reason=Reason.ROUTE_NOT_FOUND, message="HTTPRoute serving/chat does not exist")


def observe(
    route: LiveRoute | RouteProblem | None = None,
    *,
    generation: int = 1,
    available: bool = True,
    analysis: AnalysisRun | None = None,
    command: Command | None = None,
) -> Observations:
    return Observations(
        generation=generation,
        candidate_available=available,
        candidate_message="1/1 replicas available" if available else "0/1 replicas available",
        route=route if route is not None else live(0),
        analysis=analysis,
        command=command,
    )


def command(action: CommandAction, id_: str | None = None) -> Command:
    return Command(action=action, id=id_ or f"{action}-1")


# -- analysis runs ----------------------------------------------------------------------------------
class Outcome(Enum):
    """What a whole analysis run looks like; only PASS should ever let a step advance."""

    PASS = "pass"
    FAIL = "fail"  # one metric's value is outside its bounds
    EMPTY = "empty"  # one metric's query matched nothing
    NAN = "nan"  # one metric's query returned NaN
    ERROR = "error"  # one metric's query failed
    FEW_REQUESTS = "few-requests"  # the candidate served fewer than minRequests
    NO_REQUEST_COUNT = "no-request-count"  # the request-count query matched nothing


def passing_value(metric: MetricSpec) -> float:
    if metric.max is not None and metric.min is not None:
        return (metric.max + metric.min) / 2
    if metric.max is not None:
        return metric.max / 2
    if metric.min is not None:
        return metric.min + 1
    return 0.01  # judged only against the incumbent (compare, sequential): any value will do


def failing_value(metric: MetricSpec) -> float:
    if metric.max is None and metric.min is None:
        assert metric.compare is not None and metric.compare.max_ratio is not None
        return passing_value(metric) * metric.compare.max_ratio * 2
    return _failing_bound(metric)


def _failing_bound(metric: MetricSpec) -> float:
    return metric.max * 2 + 1 if metric.max is not None else (metric.min or 0) - 1


def query_of(metric: MetricSpec) -> str:
    return metric.query or f"preset:{metric.preset}"


def analysis_run(
    spec: ModelRolloutSpec,
    at: datetime,
    outcome: Outcome = Outcome.PASS,
    *,
    metric: str | None = None,
    results: Mapping[str, QueryResult] | None = None,
    requests: QueryResult | None = None,
    incumbent: Mapping[str, QueryResult] | None = None,
    incumbent_requests: QueryResult | None = None,
    totals: Mapping[str, tuple[SideTotals, SideTotals]] | None = None,
    buckets: Mapping[str, tuple[SideBuckets, SideBuckets]] | None = None,
) -> AnalysisRun:
    """A run where every metric passes except as `outcome` says, which hits `metric` (default: the
    first); `results` and `requests` override individual query results. The incumbent's value of a
    metric that compares is the candidate's passing value unless `incumbent` says otherwise."""
    assert spec.analysis is not None
    target = metric or spec.analysis.metrics[0].name
    request_count = QueryResult(value=ENOUGH_REQUESTS, sample_count=1)
    if outcome is Outcome.FEW_REQUESTS:
        request_count = QueryResult(value=TOO_FEW_REQUESTS, sample_count=1)
    elif outcome is Outcome.NO_REQUEST_COUNT:
        request_count = QueryResult()
    measured: dict[str, MetricQuery] = {}
    for spec_metric in spec.analysis.metrics:
        result = QueryResult(value=passing_value(spec_metric), sample_count=1)
        if spec_metric.name == target:
            result = _outcome_result(spec_metric, outcome, result)
        if results is not None and spec_metric.name in results:
            result = results[spec_metric.name]
        base = QueryResult(value=passing_value(spec_metric), sample_count=1) if spec_metric.compare else None
        measured[spec_metric.name] = MetricQuery(
            query=query_of(spec_metric),
            result=result,
            incumbent=(incumbent or {}).get(spec_metric.name, base),
            totals=(totals or {}).get(spec_metric.name),
            buckets=(buckets or {}).get(spec_metric.name),
        )
    return AnalysisRun(
        at=at,
        request_count=requests or request_count,
        metrics=measured,
        incumbent_request_count=incumbent_requests or QueryResult(value=ENOUGH_REQUESTS, sample_count=1),
    )


def _outcome_result(metric: MetricSpec, outcome: Outcome, passing: QueryResult) -> QueryResult:
    if outcome is Outcome.FAIL:
        return QueryResult(value=failing_value(metric), sample_count=1)
    if outcome is Outcome.EMPTY:
        return QueryResult()
    if outcome is Outcome.NAN:
        return QueryResult(value=math.nan, sample_count=1)
    if outcome is Outcome.ERROR:
        return QueryResult(error="Prometheus at http://prometheus.monitoring:9090 did not answer within 5s")
    return passing


# -- ticks, as applied ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ticked:
    """One tick as the operator applies it: its decision's actions applied, in order, to an in-memory
    world (core/actions.py). What the tests read is the world: the status written, the route writes
    made, the Events, the incumbent's replicas, the ending counted; the decision gives its wake-up."""

    before: World
    applied: Applied

    @property
    def world(self) -> World:
        return self.applied.world

    @property
    def status(self) -> ModelRolloutStatus:
        """The status as written."""
        return self.world.status

    @property
    def decision(self) -> Decision:
        return self.applied.decision

    @property
    def actions(self) -> tuple[Action, ...]:
        return self.decision.actions

    @property
    def outcome(self) -> DecisionOutcome | None:
        """The end the tick reached, as the operator counts it (a RecordEnding applied)."""
        counted = self.world.endings[len(self.before.endings) :]
        return counted[-1] if counted else None

    @property
    def wake_at(self) -> datetime | None:
        return self.decision.wake_at

    @property
    def written(self) -> int | None:
        """The candidate weight the tick's route write asked for; None: no route write was made."""
        writes = self.applied.writes
        return writes[-1][0].weight if writes else None

    @property
    def mirror_written(self) -> int | None:
        writes = self.applied.writes
        return writes[-1][0].mirror_percent if writes else None

    @property
    def events(self) -> tuple[Event, ...]:
        """The tick's Events, each transition on its own."""
        return self.applied.events

    @property
    def scaled_down(self) -> bool:
        """The tick scaled the incumbent Deployment to 0 replicas."""
        return self.before.incumbent_replicas != 0 and self.world.incumbent_replicas == 0


TAKES = Router()  # a router whose writes are live at once
NOT_LIVE = Router(applies=False)  # one whose writes are not live yet: a write returns what it carried


def as_applied(
    decision: Decision,
    route: LiveRoute | RouteProblem | None = None,
    *,
    router: Router = TAKES,
    now: datetime = T0,
) -> Ticked:
    """A decision decided outside a simulator, applied to a world whose route is `route` (default:
    all traffic on the incumbent) and whose router answers as `router` says (default: takes it)."""
    world = World(route=route if route is not None else live(0), router=router)
    return Ticked(world, apply(world, decision, now))


def weights_set(tick: Ticked) -> list[int]:
    """The candidate weights the tick's route writes asked for."""
    return [route.weight for route, _ in tick.applied.writes]


def event_reasons(tick: Ticked) -> list[str]:
    return [event.reason for event in tick.events]


def effects(tick: Ticked) -> tuple[int | None, tuple[Event, ...]]:
    """What a tick did besides writing status: a route write and Events."""
    return tick.written, tick.events


def round_trip(status: ModelRolloutStatus) -> ModelRolloutStatus:
    """The status as the operator would read it back from the API server after a restart."""
    return ModelRolloutStatus.model_validate(status.to_patch())


def _without_conditions(decision: Decision) -> tuple[object, ...]:
    """What a tick decided, but the conditions it wrote."""
    status = decision.status.model_copy(update={"conditions": ()})
    kinds = tuple(type(action).__name__ for action in decision.actions)
    effects = tuple(
        action for action in decision.actions if isinstance(action, WriteRoute | PostEvents | RecordEnding)
    )
    return (status, effects, kinds)


# -- the simulator ------------------------------------------------------------------------------------
@dataclass
class Simulator:
    """Feeds `decide` tick by tick, like the operator would: keeps the live weights and mirror, applies
    each decision's write to them, advances a fake clock and records every weight it ever applied.

    With `restart_every_tick`, the status passes through its JSON form between ticks, as it would
    across operator restarts. With `conditions_unread`, each tick is decided again from the status
    without its conditions and must decide the same: conditions are output only.
    """

    spec: ModelRolloutSpec
    now: datetime = T0
    status: ModelRolloutStatus = field(default_factory=ModelRolloutStatus)
    route: LiveRoute | RouteProblem = field(default_factory=lambda: live(0))
    generation: int = 1
    available: bool = True
    router_applies: bool = True  # False: a slow router, whose writes are not live yet
    ready: ReadyReplicas | None = None  # Ready replicas, as read for spec.capacity
    incumbent_available: bool = True  # as read in a watch window
    candidate_members: tuple[MemberAvailability, ...] = ()  # a grouped candidate's members, as read
    query_problem: SpecProblem | None = None  # some of the analysis's queries cannot be built
    # Why the analysis's queries do not answer when checked (core/judging.py); None: they answer
    # as `check_outcome` says.
    check_error: str | None = None
    check_outcome: Outcome = Outcome.PASS
    restart_every_tick: bool = False
    conditions_unread: bool = True
    uid: str = "uid-1"
    evidence: BreachEvidence | None = None  # what the metric provider tells of a breach
    notified: frozenset[str] = frozenset()  # keys whose notification the delivery finished
    finalizer: bool = False  # the rollout carries the finalizer that returns the traffic
    incumbent_replicas: int | None = None  # None: as deployed; 0 once scaled down
    applied: list[int] = field(default_factory=list)  # every weight a write made live
    ticks: list[Ticked] = field(default_factory=list)
    # The route's claim (core/holds.py): the rollout's own once it has written it.
    owners: frozenset[RolloutRef] = frozenset()
    route_claim: RouteClaim | None = None  # another rollout's claim, as the operator observes it

    @property
    def phase(self) -> Phase | None:
        return self.status.phase

    @property
    def live_weight(self) -> int | None:
        return self.route.candidate_weight if isinstance(self.route, LiveRoute) else None

    def advance(self, delta: timedelta) -> None:
        self.now += delta

    def analysis_due(self) -> bool:
        return analysis_due(self.spec, self.status, self.now)

    def run(self, outcome: Outcome = Outcome.PASS, **overrides: Any) -> AnalysisRun:
        """An analysis run taken now, of the metrics in force (the watch window's, in it)."""
        return analysis_run(in_force(self.spec, self.status), self.now, outcome, **overrides)

    def tick(
        self,
        *,
        analysis: AnalysisRun | Outcome | None = None,
        command: Command | UnreadableCommand | None = None,
        after: timedelta = timedelta(),
    ) -> Ticked:
        """One tick, `after` the previous one, its actions applied; an `analysis` given as an
        Outcome is taken at the tick's time."""
        self.advance(after)
        if isinstance(analysis, Outcome):
            analysis = self.run(analysis)
        observed = Observations(
            generation=self.generation,
            candidate_available=self.available,
            candidate_message="1/1 replicas available" if self.available else "0/1 replicas available",
            route=replace(self.route, owners=self.owners)
            if isinstance(self.route, LiveRoute)
            else self.route,
            analysis=analysis,
            command=command,
            ready_replicas=self.ready,
            incumbent_available=self.incumbent_available,
            incumbent_message="1/1 replicas available"
            if self.incumbent_available
            else "0/1 replicas available",
            candidate_members=self.candidate_members,
            query_problem=self.query_problem,
            analysis_check=self.check_run(),
            uid=self.uid,
            notified=self.notified,
            route_claim=self.route_claim,
            has_finalizer=self.finalizer,
        )
        decision = decide(self.spec, self.status, observed, self.now)
        if self.conditions_unread:
            blind = decide(self.spec, self.status.model_copy(update={"conditions": ()}), observed, self.now)
            assert _without_conditions(blind) == _without_conditions(decision), "a condition was read"
        router = Router(applies=self.router_applies, owner=observed.rollout_ref)
        world = World(
            self.claimed_route,
            self.status,
            self.finalizer,
            self.incumbent_replicas,
            router=router,
            evidence=self.evidence,
        )
        tick = Ticked(world, apply(world, decision, self.now))
        self._note(tick)
        return tick

    def _note(self, tick: Ticked) -> None:
        """Keeps what the tick's actions changed, as the operator reads it at the next tick."""
        after = tick.world
        status = after.status
        self.status = round_trip(status) if self.restart_every_tick else status
        self.finalizer, self.incumbent_replicas = after.finalizer, after.incumbent_replicas
        if isinstance(after.route, LiveRoute):
            self.route, self.owners = replace(after.route, owners=frozenset()), after.route.owners
        self.applied += [route.weight for route, written in tick.applied.writes if written == after.route]
        self.ticks.append(tick)

    @property
    def claimed_route(self) -> LiveRoute | RouteProblem:
        """The route as read, with the claim the rollout's writes left on it."""
        return replace(self.route, owners=self.owners) if isinstance(self.route, LiveRoute) else self.route

    def check_run(self) -> AnalysisRun | None:
        """The check of the analysis's queries the operator runs when one is due."""
        spec = in_force(self.spec, self.status)
        if not check_due(spec, self.status, self.now):
            return None
        if self.check_error is None:
            return analysis_run(spec, self.now, self.check_outcome)
        assert spec.analysis is not None
        return AnalysisRun.failed(
            {m.name: query_of(m) for m in spec.analysis.metrics}, self.now, self.check_error
        )

    def tick_with_analysis(
        self, outcome: Outcome = Outcome.PASS, *, after: timedelta = timedelta()
    ) -> Ticked:
        """A tick that carries an analysis run when one is due, as the operator does."""
        self.advance(after)
        return self.tick(analysis=outcome if self.analysis_due() else None)

    def start(self) -> Ticked:
        """The first tick: with the candidate Available, the rollout enters step 0 at once."""
        return self.tick()


def simulator_in(phase: Phase, spec: ModelRolloutSpec | None = None) -> Simulator:
    """A rollout (by default 20% -> indefinite pause -> 100%) brought into `phase` by ordinary ticks."""
    sim = Simulator(spec or make_spec(weight(20), indefinite_pause(), weight(100)))
    if phase is Phase.PENDING:
        sim.available = False
        sim.tick()
    elif phase is Phase.FAILED:
        sim.route = ROUTE_NOT_FOUND
        sim.tick()
    else:
        sim.start()
    if phase is Phase.PAUSED:
        sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    elif phase is Phase.SUCCEEDED:
        sim.tick(command=command(CommandAction.PROMOTE_FULL, "setup"))
    elif phase is Phase.ROLLED_BACK:
        sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert sim.phase is phase
    return sim
