"""Capacity before weight: with spec.capacity.enforce, a step raises the candidate's weight only once
ceil(incumbent Ready x weight / 100) candidate replicas are Ready, says so while it waits, and the
wait counts against the pending deadline."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from modelgate.api import ConditionStatus, ModelRolloutSpec, Phase
from modelgate.core import CommandAction, ConditionType, ReadyReplicas, Reason, reasons
from modelgate.core.holds import needed_replicas
from modelgate.core.stepping import RESYNC, next_wakeup
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    command,
    event_reasons,
    make_spec,
    weight,
)


def capacity_spec(*, with_analysis: bool = False, **extra: Any) -> ModelRolloutSpec:
    spec = make_spec(weight(20), weight(50), weight(100), with_analysis=with_analysis)
    document = {**spec.model_dump(by_alias=True, exclude_none=True), "capacity": {"enforce": True}, **extra}
    return ModelRolloutSpec.model_validate(document)


def capacity_condition(sim: Simulator) -> tuple[ConditionStatus, str] | None:
    found = reasons.condition(sim.status.conditions, ConditionType.CANDIDATE_CAPACITY)
    return None if found is None else (found.status, found.reason)


def test_a_step_waits_for_the_replicas_its_weight_needs() -> None:
    sim = Simulator(capacity_spec(), ready=ReadyReplicas(candidate=1, incumbent=10))
    sim.start()  # 20% of 10 needs 2
    assert (sim.phase, sim.live_weight, sim.status.current_step_index) == (Phase.PROGRESSING, 0, 0)
    assert capacity_condition(sim) == (ConditionStatus.FALSE, Reason.INSUFFICIENT_CAPACITY)
    assert sim.status.message is not None and "needs 2 Ready candidate replicas" in sim.status.message
    assert "has 1" in sim.status.message
    assert Reason.INSUFFICIENT_CAPACITY in event_reasons(sim.ticks[-1])
    again = sim.tick(after=RESYNC)
    assert again.written is None and Reason.INSUFFICIENT_CAPACITY not in event_reasons(again)  # said once
    assert next_wakeup(sim.spec, sim.status, sim.now) == RESYNC  # no spinning while it waits

    sim.ready = ReadyReplicas(candidate=2, incumbent=10)
    raised = sim.tick(after=timedelta(seconds=1))
    assert raised.written == 20
    assert Reason.CAPACITY_AVAILABLE in event_reasons(raised)
    assert capacity_condition(sim) == (ConditionStatus.TRUE, Reason.CAPACITY_AVAILABLE)
    assert sim.status.step_started_at == sim.now  # the step's clock starts with its weight
    # 50% of 10 needs 5: once 20 is live, the next step waits at 20.
    sim.tick(after=timedelta(seconds=1))
    assert (sim.status.current_step_index, sim.live_weight) == (1, 20)
    assert capacity_condition(sim) == (ConditionStatus.FALSE, Reason.INSUFFICIENT_CAPACITY)


def test_without_enforcement_replicas_do_not_matter() -> None:
    spec = make_spec(weight(20), weight(50), with_analysis=False)
    sim = Simulator(spec, ready=ReadyReplicas(candidate=0, incumbent=10))
    sim.start()
    sim.tick(after=timedelta(seconds=1))
    assert sim.applied == [20, 50]


def test_lowering_a_weight_never_waits() -> None:
    spec = capacity_spec().model_copy(update={"steps": (weight(50), weight(10))})
    sim = Simulator(spec, ready=ReadyReplicas(candidate=5, incumbent=10))
    sim.start()
    sim.ready = ReadyReplicas(candidate=0, incumbent=10)
    sim.tick(after=timedelta(seconds=1))
    sim.tick(after=timedelta(seconds=1))
    assert sim.applied[:2] == [50, 10] and sim.phase is Phase.SUCCEEDED


def test_promote_skips_a_waiting_step() -> None:
    sim = Simulator(capacity_spec(), ready=ReadyReplicas(candidate=0, incumbent=10))
    sim.start()
    sim.tick(command=command(CommandAction.PROMOTE_FULL))
    assert sim.phase is Phase.SUCCEEDED and sim.live_weight == 100


def test_the_wait_counts_against_the_pending_deadline() -> None:
    deadlines = {"pending": {"after": "1m", "action": "rollback"}}
    sim = Simulator(capacity_spec(progressDeadlines=deadlines), ready=ReadyReplicas(candidate=0, incumbent=4))
    sim.start()
    waited_from = sim.status.pending_since
    assert waited_from == sim.now and sim.phase is Phase.PROGRESSING
    assert waited_from is not None
    assert next_wakeup(sim.spec, sim.status, sim.now) == RESYNC
    sim.tick(after=timedelta(seconds=59))
    assert sim.phase is Phase.PROGRESSING
    sim.tick(after=timedelta(seconds=1))
    assert sim.phase is Phase.ROLLED_BACK
    assert sim.status.rollback_reason is not None


def test_analysis_of_the_held_weight_goes_on() -> None:
    sim = Simulator(capacity_spec(with_analysis=True), ready=ReadyReplicas(candidate=2, incumbent=10))
    sim.start()
    assert sim.live_weight == 20
    sim.tick(analysis=Outcome.PASS, after=INTERVAL)  # step 1 (50%) needs 5: waits at 20
    assert (sim.status.current_step_index, sim.live_weight) == (1, 20)
    assert sim.analysis_due() is False
    sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert sim.phase is Phase.ROLLED_BACK and sim.live_weight == 0


@given(incumbent=st.integers(0, 1000), weight_=st.integers(0, 100))
def test_needed_replicas_is_the_smallest_count_that_carries_the_share(incumbent: int, weight_: int) -> None:
    needed = needed_replicas(incumbent, weight_)
    assert needed * 100 >= incumbent * weight_
    assert needed == 0 or (needed - 1) * 100 < incumbent * weight_
