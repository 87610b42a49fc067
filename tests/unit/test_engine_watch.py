"""The watch window (spec.watch): analysis after the last step, a breach rolls back to an incumbent that
can take the traffic (held while it cannot), and the window's end is a success."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from modelgate.api import ConditionStatus, InvalidSpecError, MetricSpec, ModelRolloutSpec, Phase, parse_spec
from modelgate.core import CommandAction, Reason, reasons
from modelgate.core.reasons import ConditionType
from modelgate.core.stepping import next_wakeup
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    command,
    event_reasons,
    make_spec,
    weight,
)

WINDOW = timedelta(minutes=2)
LATENCY_IN_WINDOW = MetricSpec(name="latency-in-window", preset="latencyP99", max=1.0)


def watch_spec(**watch: Any) -> ModelRolloutSpec:
    document = make_spec(weight(50)).model_dump(by_alias=True, exclude_none=True)
    document["watch"] = {"duration": "2m", **watch}
    return parse_spec(document)


def in_window(spec: ModelRolloutSpec | None = None, *, restart_every_tick: bool = False) -> Simulator:
    """At 50%, then a passing analysis ends the last step: the window opens."""
    sim = Simulator(spec or watch_spec(), restart_every_tick=restart_every_tick)
    sim.start()
    decision = sim.tick(analysis=Outcome.PASS, after=INTERVAL)
    assert Reason.WATCH_STARTED in event_reasons(decision)
    return sim


def watching_condition(sim: Simulator) -> tuple[ConditionStatus, str] | None:
    found = reasons.condition(sim.status.conditions, ConditionType.WATCHING)
    return None if found is None else (found.status, found.reason)


@pytest.mark.parametrize("restart_every_tick", [False, True])
def test_the_candidate_takes_everything_and_the_rollout_succeeds_after_the_window(
    restart_every_tick: bool,
) -> None:
    sim = in_window(watch_spec(scaleDownIncumbent=True), restart_every_tick=restart_every_tick)
    opened = sim.now
    assert (sim.phase, sim.live_weight, sim.status.watch_ends_at) == (Phase.PROGRESSING, 100, opened + WINDOW)
    assert watching_condition(sim) == (ConditionStatus.TRUE, Reason.WATCH_STARTED)
    assert next_wakeup(sim.spec, sim.status, sim.now) <= INTERVAL
    while sim.now < opened + WINDOW:
        decision = sim.tick_with_analysis(Outcome.PASS, after=timedelta(seconds=10))
        if sim.now < opened + WINDOW:
            assert sim.phase is Phase.PROGRESSING and not decision.scaled_down
    assert sim.phase is Phase.SUCCEEDED and sim.live_weight == 100
    assert decision.scaled_down
    assert decision.outcome is not None and decision.outcome.reason is Reason.ROLLOUT_SUCCEEDED
    assert watching_condition(sim) == (ConditionStatus.FALSE, Reason.WATCH_PASSED)
    assert sim.status.watch_ends_at is None
    # Said once: the next tick of a Succeeded rollout scales nothing again.
    assert not sim.tick(after=timedelta(minutes=5)).scaled_down


def test_without_scale_down_the_incumbent_is_left_alone() -> None:
    sim = in_window()
    decision = sim.tick_with_analysis(Outcome.PASS, after=WINDOW)
    assert sim.phase is Phase.SUCCEEDED and not decision.scaled_down


def test_a_breach_in_the_window_rolls_back_to_the_incumbent() -> None:
    sim = in_window(watch_spec(scaleDownIncumbent=True))
    decision = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert (sim.phase, sim.live_weight) == (Phase.ROLLED_BACK, 0)
    assert decision.outcome is not None and decision.outcome.reason is Reason.METRIC_BREACH
    assert sim.status.rollback_reason is not None and sim.status.rollback_reason.metric == "error-rate"
    assert watching_condition(sim) == (ConditionStatus.FALSE, Reason.ROLLED_BACK)
    assert sim.status.watch_ends_at is None and not decision.scaled_down
    incumbent = reasons.condition(sim.status.conditions, ConditionType.INCUMBENT_AVAILABLE)
    assert incumbent is not None and incumbent.status is ConditionStatus.TRUE


def test_a_rollback_waits_for_an_incumbent_that_can_take_the_traffic() -> None:
    sim = in_window()
    sim.incumbent_available = False
    decision = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert (sim.phase, sim.live_weight) == (Phase.PAUSED, 100)
    assert event_reasons(decision) == [Reason.ROLLBACK_HELD] and decision.outcome is None
    incumbent = reasons.condition(sim.status.conditions, ConditionType.INCUMBENT_AVAILABLE)
    assert incumbent is not None and incumbent.status is ConditionStatus.FALSE
    # Held past the window's end: a breach that was not carried out is no success.
    sim.tick_with_analysis(Outcome.PASS, after=WINDOW)
    assert (sim.phase, sim.live_weight) == (Phase.PAUSED, 100)
    sim.incumbent_available = True
    decision = sim.tick(after=timedelta(seconds=10))
    assert (sim.phase, sim.live_weight) == (Phase.ROLLED_BACK, 0)
    assert decision.outcome is not None and decision.outcome.reason is Reason.METRIC_BREACH


def test_abort_carries_out_a_held_rollback_at_once() -> None:
    sim = in_window()
    sim.incumbent_available = False
    sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    decision = sim.tick(command=command(CommandAction.ABORT))
    assert (sim.phase, sim.live_weight) == (Phase.ROLLED_BACK, 0)
    assert decision.outcome is not None and decision.outcome.reason is Reason.ABORTED


def test_promote_ends_the_window_without_scaling_down() -> None:
    sim = in_window(watch_spec(scaleDownIncumbent=True))
    decision = sim.tick(command=command(CommandAction.PROMOTE))
    assert sim.phase is Phase.SUCCEEDED and not decision.scaled_down


def test_the_windows_own_metrics_are_judged_in_the_window() -> None:
    own = LATENCY_IN_WINDOW.model_dump(by_alias=True, exclude_none=True)
    sim = in_window(watch_spec(metrics=[own]))
    assert set(sim.run(Outcome.PASS).metrics) == {"latency-in-window"}
    sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert sim.phase is Phase.ROLLED_BACK
    assert sim.status.rollback_reason is not None
    assert sim.status.rollback_reason.metric == "latency-in-window"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"analysis": None}, "spec.watch"),
        ({"incumbent": {"inferencePool": "chat-v1"}}, "spec.watch.scaleDownIncumbent"),
    ],
)
def test_a_watch_that_cannot_work_is_rejected_naming_the_field(change: dict[str, Any], field: str) -> None:
    document = watch_spec(scaleDownIncumbent=True).model_dump(by_alias=True, exclude_none=True)
    document.update(change)
    document = {key: value for key, value in document.items() if value is not None}
    with pytest.raises(InvalidSpecError, match=field):
        parse_spec(document)
