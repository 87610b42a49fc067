"""Properties of the engine over random rollouts: random steps, metric outcomes, commands, tick
spacing, candidate availability and router lag, checked after every tick against an oracle kept
here, independently of the engine's own bookkeeping.

- Weights move only as the steps say (in order), to 0 (Pending, rollback) or to 100 (success),
  and are written only when the live route differs; a route edited by hand is set back within
  the tick; once rolled back, the weight stays 0 until a `retry`.
- No step is completed before its weight is live; no step with traffic is completed, and
  Succeeded is not reached, without a run in which every metric passed, taken at least one
  interval into that step (promote commands excepted).
- The phase matches the step: Paused at an indefinite pause, Progressing elsewhere (unless paused
  on Prometheus errors).
- A metric's Fail beyond its failureLimit always rolls back in that tick; nothing else but an
  abort or Prometheus errors (policy rollback) does.
- A pause on Prometheus errors holds until `resume`.
- The status always survives its JSON form.
- Failed never leaves traffic on the candidate, whatever breaks.
- Conditions are output only: every tick decides the same from the status without them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from modelgate.api import MetricSpec, ModelRolloutSpec, ModelRolloutStatus, Phase, Step
from modelgate.commands import decode_command
from modelgate.core import COMMAND_ANNOTATION, CommandAction, ConditionType, Reason, SpecProblem
from modelgate.core.reasons import condition
from tests.unit.engine_support import (
    ERROR_RATE,
    P99_LATENCY,
    ROUTE_NOT_FOUND,
    THROUGHPUT,
    Outcome,
    Simulator,
    Ticked,
    analysis_spec,
    command,
    indefinite_pause,
    live,
    make_spec,
    round_trip,
    timed_pause,
    weight,
    weights_set,
)

ACTIVE = (Phase.PROGRESSING, Phase.PAUSED)
FINISHED_BY_HAND = (Phase.ROLLED_BACK, Phase.FAILED)

# 60 rollouts in `make test`; `make bench` runs the long form (bench/test_engine_properties_long.py).
EXAMPLES = int(os.environ.get("MODELGATE_PROPERTY_EXAMPLES", "60"))
PROPERTY_SETTINGS = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- strategies -------------------------------------------------------------------------------------
@st.composite
def steps(draw: st.DrawFn) -> Step:
    # Mostly setWeight steps: an indefinite pause holds until a (rare) promote.
    kind = draw(st.sampled_from(["setWeight", "setWeight", "setWeight", "timed", "indefinite"]))
    if kind == "setWeight":
        return weight(draw(st.integers(min_value=0, max_value=100)))
    if kind == "timed":
        return timed_pause(draw(st.sampled_from(["0s", "10s", "45s", "2m"])))
    return indefinite_pause()


steps_strategy = st.lists(steps(), min_size=1, max_size=10)


@st.composite
def specs(draw: st.DrawFn) -> ModelRolloutSpec:
    steps = draw(steps_strategy)
    if not draw(st.sampled_from([True, True, True, False])):  # analysis in most examples
        return make_spec(*steps, with_analysis=False)
    metrics = [
        metric.model_copy(update={"failure_limit": draw(st.integers(min_value=0, max_value=2))})
        for metric in (ERROR_RATE, P99_LATENCY, THROUGHPUT)[: draw(st.integers(min_value=1, max_value=3))]
    ]
    analysis = analysis_spec(
        metrics,
        interval=draw(st.sampled_from(["10s", "30s"])),
        min_requests=draw(st.sampled_from([0, 50])),
    )
    return make_spec(
        *steps,
        analysis=analysis,
        on_prometheus_error=draw(st.sampled_from(["pause", "rollback"])),
        max_consecutive_errors=draw(st.integers(min_value=1, max_value=3)),
    )


@dataclass(frozen=True)
class TickPlan:
    gap: timedelta
    available: bool
    router_applies: bool
    drift: int | None  # someone edits the route by hand to this candidate weight before the tick
    outcome: Outcome
    target: int  # which metric the outcome hits
    action: CommandAction | None
    repeat_command_id: bool  # present the last command again (as after a restart)


TROUBLES = [outcome for outcome in Outcome if outcome is not Outcome.PASS]


@st.composite
def tick_plans(draw: st.DrawFn) -> list[TickPlan]:
    # Each example has its own "weather": a few outcomes it favours next to Pass, so that runs of
    # errors (or of failures, or of missing data) are common enough to reach their limits; and its
    # own habits: some commands, sent now and then (or none, so that only analysis decides).
    troubles = draw(st.lists(st.sampled_from(TROUBLES), min_size=1, max_size=2, unique=True))
    weather = [Outcome.PASS] * draw(st.sampled_from([1, 2, 4])) + troubles
    commands = draw(st.lists(st.sampled_from(CommandAction), max_size=3))
    quiet_ticks = draw(st.sampled_from([3, 10, 30]))
    plan = st.builds(
        TickPlan,
        gap=st.sampled_from([0, 1, 5, 10, 29, 30, 31, 60, 300]).map(lambda s: timedelta(seconds=s)),
        available=st.sampled_from([True, True, True, False]),
        router_applies=st.sampled_from([True, True, True, False]),
        drift=st.one_of(st.none(), st.none(), st.none(), st.integers(min_value=0, max_value=100)),
        outcome=st.sampled_from(weather),
        target=st.integers(min_value=0, max_value=2),
        action=st.sampled_from([*[None] * quiet_ticks, *commands]),
        repeat_command_id=st.booleans(),
    )
    return draw(st.lists(plan, min_size=30, max_size=80))


# -- the oracle ---------------------------------------------------------------------------------------
def weight_in_effect(steps: tuple[Step, ...], index: int) -> int:
    """The candidate weight at step `index`: the last setWeight up to it, 0 before any."""
    weights = [s.set_weight for s in steps[: index + 1] if s.set_weight is not None]
    return weights[-1] if weights else 0


def expected_weight(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> int:
    if status.phase is Phase.SUCCEEDED:
        return 100
    if status.phase in ACTIVE:
        return weight_in_effect(spec.steps, status.current_step_index)
    return 0


def paused_on_errors(status: ModelRolloutStatus) -> bool:
    healthy = condition(status.conditions, ConditionType.ANALYSIS_HEALTHY)
    return (
        status.phase is Phase.PAUSED
        and healthy is not None
        and healthy.reason == Reason.PROMETHEUS_UNAVAILABLE
    )


@dataclass(frozen=True)
class Fed:
    """An analysis run the simulator fed to the engine, as the oracle sees it."""

    at: datetime
    all_pass: bool


@dataclass
class Oracle:
    spec: ModelRolloutSpec
    failures: dict[str, int] = field(default_factory=dict)  # Fail verdicts per metric in this rollout
    errors_in_a_row: int = 0
    last_fed: Fed | None = None
    rolled_back: bool = False

    def run_passes(self, outcome: Outcome) -> bool:
        assert self.spec.analysis is not None
        no_traffic_floor = self.spec.analysis.min_requests == 0
        return outcome is Outcome.PASS or (
            no_traffic_floor and outcome in (Outcome.FEW_REQUESTS, Outcome.NO_REQUEST_COUNT)
        )

    def restart(self) -> None:
        self.failures.clear()
        self.errors_in_a_row = 0
        self.last_fed = None
        self.rolled_back = False


def target_metric(spec: ModelRolloutSpec, plan: TickPlan) -> MetricSpec:
    assert spec.analysis is not None
    return spec.analysis.metrics[plan.target % len(spec.analysis.metrics)]


# -- the property -------------------------------------------------------------------------------------
@PROPERTY_SETTINGS
@given(spec=specs(), plans=tick_plans())
def test_random_rollouts_keep_the_contract(spec: ModelRolloutSpec, plans: list[TickPlan]) -> None:
    sim = Simulator(spec)
    oracle = Oracle(spec)
    command_count = 0
    for plan in plans:
        before = sim.status
        sim.available, sim.router_applies = plan.available, plan.router_applies
        if plan.drift is not None:
            sim.route = live(plan.drift)
        sim.advance(plan.gap)

        cmd = None
        if plan.action is not None:
            if not plan.repeat_command_id or before.last_command is None:
                command_count += 1
            cmd = command(plan.action, f"{plan.action}-{command_count}")
        handled = cmd is not None and (before.last_command is None or cmd.id != before.last_command.id)
        action = cmd.action if cmd is not None and handled else None

        # Analysis only on ticks without a command, so that every run fed is also evaluated.
        fed_outcome = plan.outcome if cmd is None and sim.analysis_due() else None
        run = None
        if fed_outcome is not None:
            run = sim.run(fed_outcome, metric=target_metric(spec, plan).name)
        applied_before, live_before = len(sim.applied), sim.live_weight
        decision = sim.tick(analysis=run, command=cmd)
        after = decision.status

        check_status_round_trips(after)
        check_weights(spec, decision, sim.applied[applied_before:], live_before)
        check_phase_matches_step(spec, after)
        if plan.router_applies:
            assert sim.live_weight == after.current_weight, "the live route was left off its weight"

        restarted = before.phase in FINISHED_BY_HAND and after.phase not in FINISHED_BY_HAND
        if before.phase is None or restarted:
            oracle.restart()
        if restarted:
            assert action is CommandAction.RETRY, "only `retry` (or a new candidate) undoes a rollback"
        if action is CommandAction.RESUME and paused_on_errors(before):
            oracle.errors_in_a_row = 0

        if fed_outcome is not None:
            assert spec.analysis is not None
            oracle.last_fed = Fed(sim.now, oracle.run_passes(fed_outcome))
            if fed_outcome is Outcome.FAIL:
                name = target_metric(spec, plan).name
                oracle.failures[name] = oracle.failures.get(name, 0) + 1
            oracle.errors_in_a_row = oracle.errors_in_a_row + 1 if fed_outcome is Outcome.ERROR else 0

        check_rollbacks(spec, oracle, before, after, action, fed_outcome)
        check_steps_advance_only_on_pass(spec, oracle, sim, before, after, action, live_before)
        check_error_pause_holds(before, after, action)

        if after.phase is Phase.ROLLED_BACK:
            oracle.rolled_back = True
        if oracle.rolled_back:
            assert all(w == 0 for w in sim.applied[applied_before:]), "a rollback was undone"


def check_status_round_trips(status: ModelRolloutStatus) -> None:
    assert round_trip(status) == status


def check_weights(
    spec: ModelRolloutSpec, decision: Ticked, applied: list[int], live_before: int | None
) -> None:
    status = decision.status
    written = weights_set(decision)
    assert len(written) <= 1
    assert status.current_weight == expected_weight(spec, status), "weight not as the steps say"
    assert all(w == status.current_weight for w in written)
    assert all(w != live_before for w in written), "wrote a weight that was live already"
    assert all(w == status.current_weight for w in applied)


def paused_at_a_deadline(status: ModelRolloutStatus) -> bool:
    """Paused by a progress deadline: the default inconclusive one needs no spec."""
    healthy = condition(status.conditions, ConditionType.ANALYSIS_HEALTHY)
    return healthy is not None and healthy.reason == Reason.PROGRESS_DEADLINE_EXCEEDED


def check_phase_matches_step(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> None:
    if status.phase not in ACTIVE or paused_on_errors(status) or paused_at_a_deadline(status):
        return
    step = spec.steps[status.current_step_index]
    indefinite = step.pause is not None and step.pause.duration is None
    assert status.phase is (Phase.PAUSED if indefinite else Phase.PROGRESSING)


def check_rollbacks(
    spec: ModelRolloutSpec,
    oracle: Oracle,
    before: ModelRolloutStatus,
    after: ModelRolloutStatus,
    action: CommandAction | None,
    fed_outcome: Outcome | None,
) -> None:
    if spec.analysis is None or fed_outcome is None or before.phase not in ACTIVE:
        breached = False
    else:
        limits = {m.name: m.failure_limit for m in spec.analysis.metrics}
        breached = any(count > limits[name] for name, count in oracle.failures.items())
    if breached:
        assert after.phase is Phase.ROLLED_BACK, "a breach beyond failureLimit did not roll back"
        reason = after.rollback_reason
        assert reason is not None and reason.metric in oracle.failures

    errors_at_limit = oracle.errors_in_a_row >= spec.rollback.max_consecutive_errors
    if fed_outcome is Outcome.ERROR and before.phase in ACTIVE and errors_at_limit:
        if spec.rollback.on_prometheus_error == "rollback":
            assert after.phase is Phase.ROLLED_BACK
        else:
            assert paused_on_errors(after)
            assert after.current_step_index == before.current_step_index

    if after.phase is Phase.ROLLED_BACK and before.phase is not Phase.ROLLED_BACK:
        by_errors = spec.rollback.on_prometheus_error == "rollback" and errors_at_limit
        assert breached or by_errors or action is CommandAction.ABORT, "a rollback without a reason"


def check_steps_advance_only_on_pass(
    spec: ModelRolloutSpec,
    oracle: Oracle,
    sim: Simulator,
    before: ModelRolloutStatus,
    after: ModelRolloutStatus,
    action: CommandAction | None,
    live_before: int | None,
) -> None:
    """Every step completed in this tick had its weight live; with traffic on the candidate, it
    also had a passing run taken at least one interval after the step started."""
    if action is CommandAction.PROMOTE_FULL:
        return
    if after.phase not in (*ACTIVE, Phase.SUCCEEDED) or after.phase is before.phase is Phase.SUCCEEDED:
        return
    # Steps entered before this tick started then; steps entered in this tick start now.
    continued = before.phase in ACTIVE
    first = before.current_step_index if continued else 0
    for index in range(first, min(after.current_step_index, len(spec.steps))):
        entered_earlier = continued and index == first
        if entered_earlier and action is CommandAction.PROMOTE:
            continue  # finished by hand
        assert weight_in_effect(spec.steps, index) == live_before, f"step {index} completed before live"
        if spec.analysis is None or weight_in_effect(spec.steps, index) == 0:
            continue
        started = before.step_started_at if entered_earlier else sim.now
        assert started is not None
        fed = oracle.last_fed
        assert fed is not None, f"step {index} completed without any analysis"
        assert fed.all_pass, f"step {index} completed without every metric passing"
        assert fed.at >= started + spec.analysis.interval_timedelta, f"step {index}: run taken too early"


def check_error_pause_holds(
    before: ModelRolloutStatus, after: ModelRolloutStatus, action: CommandAction | None
) -> None:
    if not paused_on_errors(before):
        return
    if action in (CommandAction.RESUME, CommandAction.PROMOTE_FULL, CommandAction.ABORT):
        return
    if after.phase is Phase.ROLLED_BACK:
        return  # a breach still rolls back
    assert paused_on_errors(after), "a pause on Prometheus errors ended without `resume`"
    assert after.current_step_index == before.current_step_index


# -- Failed never strands traffic ----------------------------------------------------------------------
UNBUILDABLE = SpecProblem("spec.analysis.metrics[0].query (metric error-rate): unknown variable")


@dataclass(frozen=True)
class HostileTick:
    gap: timedelta
    outcome: Outcome
    route_gone: bool  # the route cannot be read in this tick
    query_problem: bool  # the analysis's queries cannot be built in this tick
    garbled_command: bool  # the command annotation is not a command
    action: CommandAction | None


hostile_ticks = st.lists(
    st.builds(
        HostileTick,
        gap=st.sampled_from([0, 5, 30, 61, 300]).map(lambda s: timedelta(seconds=s)),
        outcome=st.sampled_from(
            [Outcome.PASS, Outcome.PASS, Outcome.ERROR, Outcome.FEW_REQUESTS, Outcome.FAIL]
        ),
        route_gone=st.sampled_from([False] * 6 + [True]),
        query_problem=st.sampled_from([False, False, True]),
        garbled_command=st.sampled_from([False] * 5 + [True]),
        action=st.sampled_from([None] * 8 + list(CommandAction)),
    ),
    min_size=10,
    max_size=60,
)


def with_deadline(spec: ModelRolloutSpec, action: str) -> ModelRolloutSpec:
    """spec with progress deadlines of 1m that take `action`."""
    deadline = {"after": "1m", "action": action}
    document = spec.model_dump(by_alias=True, exclude_none=True)
    document["progressDeadlines"] = {"pending": deadline, "inconclusive": deadline}
    return ModelRolloutSpec.model_validate(document)


@PROPERTY_SETTINGS
@given(
    spec=specs(),
    deadline=st.sampled_from([None, "fail", "pause", "rollback"]),
    ticks=hostile_ticks,
)
def test_failed_never_leaves_traffic_on_the_candidate(
    spec: ModelRolloutSpec, deadline: str | None, ticks: list[HostileTick]
) -> None:
    """Whatever breaks (a route that cannot be read, queries that cannot be built, a garbled command,
    a deadline that fails), Failed asks for weight 0 and the route carries it once it can be written;
    a query that cannot be built never fails a rollout whose candidate has traffic."""
    sim = Simulator(with_deadline(spec, deadline) if deadline else spec)
    for number, hostile in enumerate(ticks):
        before = sim.status
        sim.advance(hostile.gap)
        sim.route = ROUTE_NOT_FOUND if hostile.route_gone else live(sim.status.live_weight or 0)
        sim.query_problem = UNBUILDABLE if hostile.query_problem else None
        garbled = (
            decode_command({COMMAND_ANNOTATION: f"promote {number}"}) if hostile.garbled_command else None
        )
        cmd = garbled or (command(hostile.action, f"{hostile.action}-{number}") if hostile.action else None)
        run = None
        if sim.spec.analysis is not None and cmd is None and sim.analysis_due():
            run = sim.run(Outcome.ERROR if hostile.query_problem else hostile.outcome)
        decision = sim.tick(analysis=run, command=cmd)
        after = decision.status
        if after.phase is Phase.FAILED:
            assert after.current_weight == 0 and decision.written in (None, 0)
            assert hostile.route_gone or sim.live_weight == 0, "Failed left traffic on the candidate"
        candidate_had_traffic = before.phase in ACTIVE and (before.live_weight or 0) > 0
        if hostile.query_problem and candidate_had_traffic and not hostile.route_gone:
            assert after.phase is not Phase.FAILED or deadline == "fail" or cmd is not None
