"""The pending deadline's default: a candidate that never becomes Available ends the rollout Failed
after 600 s (Argo Rollouts' progressDeadlineSeconds) with traffic on the incumbent, unless the spec
sets its own deadline or turns it off with `action: wait`."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from modelgate.api import ModelRolloutSpec, Phase
from modelgate.api.progress_deadlines import DEFAULT_PENDING_DEADLINE
from modelgate.core import ReadyReplicas, Reason
from modelgate.core.stepping import next_wakeup
from tests.unit.engine_support import Simulator, event_reasons, make_spec, weight

ARGO_PROGRESS_DEADLINE = timedelta(seconds=600)


def spec(**extra: Any) -> ModelRolloutSpec:
    document = make_spec(weight(20), weight(100), with_analysis=False).model_dump(
        by_alias=True, exclude_none=True
    )
    return ModelRolloutSpec.model_validate(document | extra)


def test_the_default_is_argos_progress_deadline() -> None:
    assert DEFAULT_PENDING_DEADLINE.after_timedelta == ARGO_PROGRESS_DEADLINE


def test_an_unset_pending_deadline_fails_the_rollout_after_600s_at_weight_0() -> None:
    sim = Simulator(spec(), available=False)
    sim.start()
    assert sim.phase is Phase.PENDING
    # The operator wakes for it without a watch event.
    assert next_wakeup(sim.spec, sim.status, sim.now) <= ARGO_PROGRESS_DEADLINE
    sim.tick(after=ARGO_PROGRESS_DEADLINE - timedelta(seconds=1))
    assert sim.phase is Phase.PENDING
    decision = sim.tick(after=timedelta(seconds=1))
    assert (sim.phase, sim.status.current_weight, sim.live_weight) == (Phase.FAILED, 0, 0)
    assert Reason.PROGRESS_DEADLINE_EXCEEDED in event_reasons(decision)
    assert decision.outcome is not None and decision.outcome.reason is Reason.PROGRESS_DEADLINE_EXCEEDED
    assert not any(sim.applied)  # the candidate never had traffic


def test_action_wait_turns_the_deadline_off() -> None:
    sim = Simulator(spec(progressDeadlines={"pending": {"after": "1m", "action": "wait"}}), available=False)
    sim.start()
    for _ in range(6):
        sim.tick(after=timedelta(hours=1))
    assert (sim.phase, sim.status.current_weight) == (Phase.PENDING, 0)


def test_a_capacity_wait_past_the_default_returns_the_traffic() -> None:
    """A step that waits for replicas counts against the same default, and Failed takes the
    candidate's earlier weight back."""
    capacity = spec(capacity={"enforce": True})
    sim = Simulator(capacity, ready=ReadyReplicas(candidate=1, incumbent=4))
    sim.start()
    sim.tick()  # step 1 (100%) needs 4 candidate replicas: it waits at 20
    assert (sim.phase, sim.live_weight, sim.status.pending_since) == (Phase.PROGRESSING, 20, sim.now)
    sim.tick(after=ARGO_PROGRESS_DEADLINE - timedelta(seconds=1))
    assert sim.phase is Phase.PROGRESSING
    sim.tick(after=timedelta(seconds=1))
    assert (sim.phase, sim.live_weight) == (Phase.FAILED, 0)
