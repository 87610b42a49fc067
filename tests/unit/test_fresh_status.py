"""A new rollout (a new candidate, a spec edit, `modelgate retry`) starts from the status model's
defaults: every field but the few the object keeps (core.tick.KEPT) is reset, including any
field added later."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import (
    AnalysisSample,
    CommandResult,
    Condition,
    ConditionStatus,
    EarlierRollout,
    FalseRollbackWarning,
    LastCommand,
    MetricAnalysis,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RollbackReason,
    RollingBack,
    RolloutPause,
    RolloutRef,
    RouteState,
    Verdict,
)
from modelgate.api.analysis_check import AnalysisCheck
from modelgate.api.cost_status import CostStatus, SideCost
from modelgate.api.gate_status import GateStatus
from modelgate.api.history import WeightChange
from modelgate.api.internal_error_status import InternalError
from modelgate.api.notifications import NotificationStatus, PendingNotification, Transition
from modelgate.api.policy_ref import PolicyKind
from modelgate.api.rollout_policy import PinnedPolicy
from modelgate.core.tick import KEPT, fresh_status
from tests.unit.engine_support import T0

LATER = T0 + timedelta(hours=1)
# Set by the start itself.
STARTED = {"phase", "message", "rollout_candidate", "rollout_started_at", "pending_since"}


def busy_status() -> ModelRolloutStatus:
    """A status with every field away from its default."""
    metric = MetricAnalysis(
        name="error-rate",
        verdict=Verdict.FAIL,
        time=T0,
        value=0.5,
        failures=2,
        history=(AnalysisSample(time=T0, value=0.5, verdict=Verdict.FAIL),),
    )
    return ModelRolloutStatus(
        phase=Phase.PAUSED,
        message="paused",
        observed_generation=3,
        rollout_candidate="chat-v1",
        rollout_started_at=T0,
        earlier_rollouts=(EarlierRollout(candidate="chat-v0", started_at=T0, phase=Phase.SUCCEEDED),),
        step_starts=(0.0, 5.0),
        weight_changes=(WeightChange(weight=20, seconds=0), WeightChange(weight=50, seconds=5)),
        last_command=LastCommand(id="c1", name="resume", result=CommandResult.APPLIED, message="m", time=T0),
        current_step_index=2,
        current_weight=40,
        live_weight=40,
        current_mirror_percent=5,
        live_mirror_percent=5,
        route_state=RouteState.WEIGHT_NOT_APPLIED,
        route_owner=RolloutRef(namespace="serving", name="older", uid="uid-0"),
        candidate_available=True,
        pending_since=T0,
        capacity_wait_since=T0,
        inconclusive_since=T0,
        watch_ends_at=T0,
        step_started_at=T0,
        last_analysis_at=T0,
        consecutive_prometheus_errors=2,
        analysis=(metric,),
        cost=CostStatus(
            time=T0,
            window_seconds=60,
            candidate=SideCost(accelerators=2, price_per_hour=2.5),
            incumbent=SideCost(accelerators=1, price_per_hour=2.5),
        ),
        rollback_reason=RollbackReason(time=T0, message="breach"),
        internal_error=InternalError(time=T0, type="KeyError", message="'weight'"),
        rolling_back=RollingBack(started_at=T0, from_weight=40, ends_at=LATER),
        gate=GateStatus(started_at=T0, run="r1"),
        false_rollback_warnings=(
            FalseRollbackWarning(metric="m", step=0, chance=0.3, base_rate=0.1, candidate_requests=10),
        ),
        analysis_check=AnalysisCheck(analysis="abc", at=T0),
        pause=RolloutPause(reason=PauseReason.PROMETHEUS_ERRORS, since=T0, message="errors"),
        notifications=NotificationStatus(
            sequence=1, pending=(PendingNotification(transition=Transition.PAUSED, sequence=1, at=T0),)
        ),
        policy=PinnedPolicy(
            kind=PolicyKind.CLUSTER,
            name="p",
            generation=1,
            candidate="chat-v1",
            spec="{}",
            resolved_hash="abc",
        ),
        conditions=(
            Condition(
                type="AnalysisHealthy",
                status=ConditionStatus.FALSE,
                reason="PrometheusUnavailable",
                message="m",
                last_transition_time=T0,
            ),
        ),
    )


def test_the_busy_status_sets_every_field() -> None:
    """Guards the test below: a field added to the status needs a value here, so it is checked too."""
    default, busy = ModelRolloutStatus(), busy_status()
    unset = [
        name for name in ModelRolloutStatus.model_fields if getattr(busy, name) == getattr(default, name)
    ]
    assert unset == []


def test_every_field_but_the_kept_ones_is_reset() -> None:
    before = busy_status()
    fresh = fresh_status(before, "chat-v2", LATER, "rolling out chat-v2")
    default = ModelRolloutStatus()
    for name in ModelRolloutStatus.model_fields:
        if name in STARTED or name == "earlier_rollouts":
            continue
        expected = getattr(before, name) if name in KEPT else getattr(default, name)
        assert getattr(fresh, name) == expected, name
    assert (fresh.phase, fresh.rollout_candidate, fresh.rollout_started_at, fresh.pending_since) == (
        Phase.PENDING,
        "chat-v2",
        LATER,
        LATER,
    )


def test_the_replaced_rollout_joins_the_history() -> None:
    fresh = fresh_status(busy_status(), "chat-v2", LATER, "rolling out chat-v2")
    assert [(r.candidate, r.phase) for r in fresh.earlier_rollouts] == [
        ("chat-v0", Phase.SUCCEEDED),
        ("chat-v1", Phase.PAUSED),
    ]
