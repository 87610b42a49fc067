"""A rollout replayed over recorded metrics: the engine's own `decide` ticking on a simulated clock.

Pure: the metrics come from a MetricProvider (for a replay, `metrics.recorded.RecordedProvider` over
fetched ranges), each decision's actions are applied to an in-memory world (core/actions.py) whose
route takes every weight written at once, and the candidate is taken as Available throughout.
Nothing is written anywhere."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase, RollbackReason
from modelgate.core import (
    Decision,
    LiveRoute,
    Observations,
    World,
    analysis_due,
    apply,
    decide,
)
from modelgate.core.judging import check_due
from modelgate.metrics import AnalysisPlan, MetricProvider

GENERATION = 1


@dataclass(frozen=True)
class SimulatedEvent:
    time: datetime
    reason: str
    message: str


@dataclass(frozen=True)
class StepSpan:
    index: int
    started_at: datetime
    ended_at: datetime | None  # None: still running when the range ended, or ended by a rollback


@dataclass(frozen=True)
class Replay:
    start: datetime
    end: datetime  # when the simulation stopped: the rollout's end, or the range's
    steps: tuple[StepSpan, ...]
    weights: tuple[tuple[datetime, int], ...]  # every change of the candidate's weight
    events: tuple[SimulatedEvent, ...]
    status: ModelRolloutStatus  # the last one
    ticks: int  # how many times the engine decided: what the simulation cost

    @property
    def phase(self) -> Phase | None:
        return self.status.phase

    @property
    def rollback(self) -> RollbackReason | None:
        return self.status.rollback_reason if self.status.phase is Phase.ROLLED_BACK else None


def simulate(
    spec: ModelRolloutSpec,
    provider: MetricProvider,
    plan: AnalysisPlan,
    start: datetime,
    end: datetime,
    route_changed: Callable[[datetime, LiveRoute], None] | None = None,
) -> Replay:
    """Ticks from `start` as the operator's loop would (at each decision's `wake_at`) until the
    rollout ends, or its gradual rollback reaches 0, or `end`. `route_changed` hears of each write
    as it goes live (a simulated provider sends its traffic by it)."""
    world = World()
    status, route, now = world.status, LiveRoute(100, 0), start
    spans: dict[int, StepSpan] = {}
    weights: list[tuple[datetime, int]] = [(start, 0)]
    events: list[SimulatedEvent] = []
    ticks = 0
    while now <= end:
        ticks += 1
        analysis = provider.run(plan, now) if analysis_due(spec, status, now) else None
        check = provider.run(plan, now) if check_due(spec, status, now) else None
        observed = Observations(
            GENERATION, True, "simulated: Available", route, analysis, analysis_check=check
        )
        applied = apply(world, decide(spec, status, observed, now), now)
        world, decision = applied.world, applied.decision
        _note_steps(spans, status, decision, now)
        events.extend(SimulatedEvent(now, str(e.reason), e.message) for e in applied.events)
        assert isinstance(world.route, LiveRoute), "the simulated route takes every write"
        status, route = world.status, world.route
        if applied.writes and route_changed is not None:
            route_changed(now, route)
        if route.candidate_weight != weights[-1][1]:
            weights.append((now, route.candidate_weight))
        if status.ended and status.rolling_back is None:
            break
        assert decision.wake_at is not None, "decide says when to look again"
        now = decision.wake_at
    return Replay(start, min(now, end), tuple(spans.values()), tuple(weights), tuple(events), status, ticks)


def _note_steps(
    spans: dict[int, StepSpan], before: ModelRolloutStatus, decision: Decision, now: datetime
) -> None:
    after = decision.status
    if after.step_started_at is None or after.step_started_at == before.step_started_at:
        return
    for index in range(before.current_step_index, after.current_step_index):
        started = spans[index].started_at if index in spans else now  # passed through in one tick
        spans[index] = StepSpan(index, started, now)
    if after.phase is not Phase.SUCCEEDED:
        spans[after.current_step_index] = StepSpan(after.current_step_index, now, None)
