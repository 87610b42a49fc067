"""The figures of `modelgate plan`: the operator's own engine over simulated traffic, counted.

The figures of `modelgate plan`: rollouts simulated with the operator's own engine (`decide`, and
in it `core.metric_verdicts.evaluate`) over simulated traffic, counted. Nothing here judges a value: every
verdict, every step's end and every rollback is the engine's, so the figures cannot disagree with
the operator on what a rule does.

Two candidates are simulated: one exactly as good as the incumbent (every rollback of it is false)
and one whose rate is `regression` times the incumbent's. Seeded: the same arguments give the same
figures."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from modelgate.api import MetricSpec, ModelRolloutSpec, Phase
from modelgate.cli.plan.simulation import Replay, simulate
from modelgate.cli.plan.traffic import SimulatedProvider, simulable
from modelgate.core.results import timed_length
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.provider import AnalysisPlan

START = datetime(2026, 1, 1, tzinfo=UTC)  # any moment: only durations are reported
MIN_HORIZON = timedelta(minutes=5)
Z95 = 1.959964  # the standard normal's 97.5% quantile


@dataclass(frozen=True)
class Traffic:
    requests_per_second: float  # both sides together
    base_rate: float  # the incumbent's share of failing requests (errors, aborts, ...)
    regression: float  # the worse candidate's rate, as a multiple of base_rate


@dataclass(frozen=True)
class Outcome:
    """One simulated rollout."""

    phase: Phase | None
    rolled_back_in: int | None  # the step it was rolled back in
    rolled_back_after: float | None  # seconds from the start
    step_seconds: tuple[float | None, ...]  # how long each step took; None: not completed
    promoted_after: float | None  # seconds from the start
    ticks: int  # the engine's decisions it took: what it cost to simulate

    @classmethod
    def of(cls, replay: Replay, steps: int) -> Outcome:
        reason = replay.rollback
        durations: list[float | None] = [None] * steps
        for span in replay.steps:
            if span.ended_at is not None and span.index < steps:
                durations[span.index] = (span.ended_at - span.started_at).total_seconds()
        promoted = replay.phase is Phase.SUCCEEDED
        return cls(
            replay.phase,
            replay.status.current_step_index if reason is not None else None,
            (reason.time - replay.start).total_seconds() if reason is not None else None,
            tuple(durations),
            (replay.end - replay.start).total_seconds() if promoted else None,
            replay.ticks,
        )


@dataclass(frozen=True)
class Runs:
    """How many rollouts of each candidate to simulate: `most`, or fewer once their ticks (the
    engine's decisions, what a plan's time goes to) reach `ticks`, but at least `least`. Counted in
    ticks rather than seconds, so the same arguments give the same figures on any machine."""

    most: int
    least: int
    ticks: int | None = None  # None: exactly `most`

    @classmethod
    def exactly(cls, runs: int) -> Runs:
        return cls(runs, runs)

    def done(self, runs: int, ticks: int) -> bool:
        spent = self.ticks is not None and ticks >= self.ticks
        return runs >= self.most or (runs >= self.least and spent)

    def shared(self, ways: int) -> Runs:
        """The budget of one of `ways` simulations that share this one's ticks."""
        return self if self.ticks is None else Runs(self.most, self.least, self.ticks // ways)

    def share_done(self, runs: int, ticks: int) -> float:
        by_ticks = ticks / self.ticks if self.ticks else 0.0
        return min(1.0, max(runs / self.most, min(by_ticks, runs / self.least)))


# A plan's default: about TICKS of the engine's decisions in all (some seconds), shared by its rules.
AUTO_RUNS = Runs(most=500, least=30, ticks=8_000)


@dataclass(frozen=True)
class StepFigures:
    index: int
    false_rollback: float  # share of as-good candidates rolled back in this step
    caught: float  # share of worse candidates rolled back in this step
    median_caught_after: float | None  # of those, seconds from the rollout's start
    median_duration: float | None  # of the as-good candidates that completed it, seconds


@dataclass(frozen=True)
class Figures:
    """What one rule (or all together) does to the two candidates, over `runs` simulated rollouts."""

    name: str
    runs: int
    window_seconds: float  # the analysis's query window
    steps: tuple[StepFigures, ...]
    false_rollback: float
    false_rollback_interval: tuple[float, float]  # its 95% interval, from `runs` rollouts
    caught: float
    caught_interval: tuple[float, float]
    median_caught_after: float | None
    promoted: float  # share of as-good candidates promoted within the horizon
    median_promoted_after: float | None
    waiting: float  # share of as-good candidates neither promoted nor rolled back by the horizon


@dataclass(frozen=True)
class Unplanned:
    name: str
    why: str


def step_shares(spec: ModelRolloutSpec) -> list[float]:
    """The candidate's share of requests during each step, copies of a mirror step included."""
    shares, weight = [], 0.0
    for step in spec.steps:
        if step.set_weight is not None:
            weight = step.set_weight / 100
        mirror = step.mirror.percent / 100 if step.mirror is not None else 0.0
        shares.append(weight + (1 - weight) * mirror)
    return shares


def planned_spec(spec: ModelRolloutSpec, metrics: Sequence[MetricSpec]) -> ModelRolloutSpec:
    """The spec the simulation runs: its steps and analysis with only `metrics`. What needs the
    cluster (a gate's check Jobs, ready replicas for capacity) and the watch window after the last
    step are left out: the plan is of the steps."""
    assert spec.analysis is not None
    analysis = spec.analysis.model_copy(update={"metrics": tuple(metrics)})
    return spec.model_copy(update={"analysis": analysis, "gate": None, "capacity": None, "watch": None})


def split_metrics(spec: ModelRolloutSpec) -> tuple[tuple[MetricSpec, ...], tuple[Unplanned, ...]]:
    """The metrics the plan simulates, and the others with why not."""
    assert spec.analysis is not None
    planned, unplanned = [], []
    for metric in spec.analysis.metrics:
        why = "dryRun: it decides nothing" if metric.dry_run else simulable(metric)
        if why is None:
            planned.append(metric)
        else:
            unplanned.append(Unplanned(metric.name, why))
    return tuple(planned), tuple(unplanned)


def horizon(spec: ModelRolloutSpec) -> timedelta:
    """How long a simulated rollout may run: four times the time its steps take when every analysis
    passes at once, and at least five minutes. A rollout neither promoted nor rolled back by then
    is counted as waiting."""
    assert spec.analysis is not None
    interval = spec.analysis.interval_timedelta
    nominal = timedelta()
    for step in spec.steps:
        nominal += max(timed_length(step) or timedelta(), interval)
    return max(4 * nominal, MIN_HORIZON)


def simulate_once(
    spec: ModelRolloutSpec, plan: AnalysisPlan, traffic: Traffic, rates: tuple[float, float], seed: str
) -> Outcome:
    provider = SimulatedProvider(random.Random(seed), traffic.requests_per_second, rates, START - plan.window)
    end = START + horizon(spec)
    replay = simulate(spec, provider, plan, START, end, route_changed=provider.route_changed)
    return Outcome.of(replay, len(spec.steps))


def figures(
    name: str,
    spec: ModelRolloutSpec,
    traffic: Traffic,
    runs: Runs | int,
    seed: int,
    progress: Callable[[float], None] = lambda share: None,
) -> Figures:
    """Rollouts of each candidate through `spec` (already a planned_spec), as many as `runs` says;
    `progress` hears the share of them done after each pair."""
    budget = runs if isinstance(runs, Runs) else Runs.exactly(runs)
    plan = analysis_plan(spec, "plan")
    worse = traffic.base_rate * traffic.regression
    as_good: list[Outcome] = []
    regressed: list[Outcome] = []
    ticks = 0
    while not budget.done(len(as_good), ticks):
        run = len(as_good)
        good = (traffic.base_rate, traffic.base_rate)
        as_good.append(simulate_once(spec, plan, traffic, good, f"{seed}/{name}/aa/{run}"))
        regressed.append(
            simulate_once(spec, plan, traffic, (worse, traffic.base_rate), f"{seed}/{name}/x/{run}")
        )
        ticks += as_good[-1].ticks + regressed[-1].ticks
        progress(budget.share_done(len(as_good), ticks))
    return _counted(name, plan.window.total_seconds(), as_good, regressed)


def _counted(name: str, window: float, as_good: Sequence[Outcome], regressed: Sequence[Outcome]) -> Figures:
    runs = len(as_good)
    steps = tuple(_step(index, as_good, regressed) for index in range(len(as_good[0].step_seconds)))
    caught = [o.rolled_back_after for o in regressed if o.rolled_back_after is not None]
    promoted = [o.promoted_after for o in as_good if o.promoted_after is not None]
    false_rollbacks = sum(o.rolled_back_in is not None for o in as_good)
    return Figures(
        name,
        runs,
        window,
        steps,
        false_rollbacks / runs,
        wilson_interval(false_rollbacks, runs),
        len(caught) / runs,
        wilson_interval(len(caught), runs),
        _median(caught),
        len(promoted) / runs,
        _median(promoted),
        (runs - false_rollbacks - len(promoted)) / runs,
    )


def wilson_interval(count: int, runs: int) -> tuple[float, float]:
    """The 95% interval of a share seen `count` times in `runs` (Wilson's score interval: unlike
    p +- 2 standard errors, it is not [0, 0] when nothing was seen)."""
    share, z2 = count / runs, Z95**2
    centre = (share + z2 / (2 * runs)) / (1 + z2 / runs)
    half = Z95 * math.sqrt(share * (1 - share) / runs + z2 / (4 * runs**2)) / (1 + z2 / runs)
    # At none or all seen the interval ends at 0 or 1 exactly, which float rounding misses by an ulp.
    low = 0.0 if count == 0 else max(0.0, centre - half)
    return low, 1.0 if count == runs else min(1.0, centre + half)


def _step(index: int, as_good: Sequence[Outcome], regressed: Sequence[Outcome]) -> StepFigures:
    caught = [o.rolled_back_after for o in regressed if o.rolled_back_in == index]
    durations = [o.step_seconds[index] for o in as_good if o.step_seconds[index] is not None]
    return StepFigures(
        index,
        sum(o.rolled_back_in == index for o in as_good) / len(as_good),
        len(caught) / len(regressed),
        _median([c for c in caught if c is not None]),
        _median([d for d in durations if d is not None]),
    )


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None
