"""Each policy rule as a table: a state in (spec, status, observations, now), an intent out. A rule
reads its view and returns data; nothing here runs the engine."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from modelgate.api import (
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RollbackReason,
    RollingBack,
    RolloutPause,
)
from modelgate.core import Reason
from modelgate.core.endings import rollback_verdict, step_down, window_note, window_verdict
from modelgate.core.holds import (
    candidate_deadline,
    capacity_deadline,
    capacity_wait,
    conflict_hold,
    deadline_hold,
)
from modelgate.core.judging import analysis_verdict, errors_hold, judged
from modelgate.core.model import AskWeight, Intent, Noted, Observations, ReadyReplicas, SetCondition
from modelgate.core.policy import Rule, candidate_wait, no_traffic_yet
from modelgate.core.reasons import ConditionType
from modelgate.core.tick import Tick

from .engine_support import Outcome, analysis_run, live, make_spec, observe, weight

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
SPEC = make_spec(weight(20), weight(100))


def _with(spec: ModelRolloutSpec, **fields: Any) -> ModelRolloutSpec:
    document = spec.model_dump(by_alias=True, exclude_none=True) | fields
    return ModelRolloutSpec.model_validate(document)


def _pending_deadline(action: str) -> ModelRolloutSpec:
    return _with(SPEC, progressDeadlines={"pending": {"after": "5m", "action": action}})


def _paused(reason: PauseReason, **fields: Any) -> ModelRolloutStatus:
    pause = RolloutPause(reason=reason, since=NOW - timedelta(minutes=1), message="held")
    return _status(phase=Phase.PAUSED, pause=pause, **fields)


def _status(**fields: Any) -> ModelRolloutStatus:
    stepping = {
        "phase": Phase.PROGRESSING,
        "current_weight": 20,
        "step_started_at": NOW - timedelta(minutes=2),
    }
    return ModelRolloutStatus().model_copy(update=stepping | fields)


def _run(outcome: Outcome, spec: ModelRolloutSpec = SPEC) -> Observations:
    return observe(live(20), analysis=analysis_run(spec, NOW, outcome))


def _intent(
    rule: Rule, spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations
) -> Intent | Noted:
    view = Tick(spec, status, observed, NOW)
    view.analysed = judged(view)
    before = (view.status, tuple(view.events), view.weight)
    intent = rule(view)
    assert (view.status, tuple(view.events), view.weight) == before, f"{rule.__name__} wrote its view"
    return intent


def _shape(intent: Intent | Noted) -> tuple[object, ...]:
    """What an intent decides: its kind, and the pause, cause and Event a hold or failure carries."""
    if intent is None:
        return (None,)
    pause, cause = getattr(intent, "pause", None), getattr(intent, "cause", None)
    event = getattr(intent, "event", None)
    return (type(intent).__name__, pause, cause, None if event is None else event.reason)


RECENT = NOW - timedelta(minutes=1)
LONG_AGO = NOW - timedelta(hours=1)
RETURNED = "RollBack", None, Reason.PROMETHEUS_UNAVAILABLE, None
ERRORS_PAUSE = ("Hold", PauseReason.PROMETHEUS_ERRORS, Reason.PROMETHEUS_UNAVAILABLE)
DEADLINE = Reason.PROGRESS_DEADLINE_EXCEEDED
ROLLBACK = _with(SPEC, rollback={"onPrometheusError": "rollback", "maxConsecutiveErrors": 3})
CAPACITY = _with(SPEC, capacity={"enforce": True})
WATCHING = _status(current_step_index=2, current_weight=100, watch_ends_at=NOW + timedelta(minutes=5))
HELD_ROLLBACK = RollbackReason(time=RECENT, message="error-rate breached")
STEPPING_DOWN = _status(
    phase=Phase.ROLLED_BACK,
    rolling_back=RollingBack(started_at=RECENT, from_weight=20, ends_at=NOW + timedelta(minutes=4)),
)

TABLE: list[tuple[str, Rule, ModelRolloutSpec, ModelRolloutStatus, Observations, tuple[object, ...]]] = [
    # analysis_verdict: a breach, or errors past the limit with onPrometheusError rollback
    ("a passing run", analysis_verdict, SPEC, _status(), _run(Outcome.PASS), (None,)),
    (
        "a breach",
        analysis_verdict,
        SPEC,
        _status(),
        _run(Outcome.FAIL),
        ("RollBack", None, Reason.METRIC_BREACH, None),
    ),
    (
        "errors below the limit",
        analysis_verdict,
        ROLLBACK,
        _status(consecutive_prometheus_errors=2),
        _run(Outcome.ERROR),
        (None,),
    ),
    (
        "errors at the limit, rollback",
        analysis_verdict,
        ROLLBACK,
        _status(consecutive_prometheus_errors=3),
        _run(Outcome.ERROR),
        RETURNED,
    ),
    (
        "errors at the limit, pause",
        analysis_verdict,
        SPEC,
        _status(consecutive_prometheus_errors=3),
        _run(Outcome.ERROR),
        (None,),
    ),
    # errors_hold: the pause on failed queries is the Hold itself, said once
    ("no run, no pause", errors_hold, SPEC, _status(), observe(live(20)), (None,)),
    (
        "errors below the limit",
        errors_hold,
        SPEC,
        _status(consecutive_prometheus_errors=2),
        _run(Outcome.ERROR),
        (None,),
    ),
    (
        "errors reach the limit",
        errors_hold,
        SPEC,
        _status(consecutive_prometheus_errors=3),
        _run(Outcome.ERROR),
        (*ERRORS_PAUSE, Reason.ANALYSIS_PAUSED),
    ),
    (
        "errors go on while paused",
        errors_hold,
        SPEC,
        _paused(PauseReason.PROMETHEUS_ERRORS, consecutive_prometheus_errors=1),
        _run(Outcome.ERROR),
        (*ERRORS_PAUSE, None),
    ),
    (
        "paused, queries answer",
        errors_hold,
        SPEC,
        _paused(PauseReason.PROMETHEUS_ERRORS),
        _run(Outcome.PASS),
        ("Hold", PauseReason.PROMETHEUS_ERRORS, None, None),
    ),
    # candidate_deadline and candidate_wait: the deadline acts first, then the wait holds
    (
        "available",
        candidate_deadline,
        _pending_deadline("pause"),
        _status(phase=Phase.PENDING, pending_since=LONG_AGO),
        observe(),
        (None,),
    ),
    (
        "within the deadline",
        candidate_deadline,
        _pending_deadline("pause"),
        _status(phase=Phase.PENDING, pending_since=RECENT),
        observe(available=False),
        (None,),
    ),
    (
        "past it: pause",
        candidate_deadline,
        _pending_deadline("pause"),
        _status(phase=Phase.PENDING, pending_since=LONG_AGO),
        observe(available=False),
        ("Hold", PauseReason.PENDING_DEADLINE, DEADLINE, DEADLINE),
    ),
    (
        "past it: fail",
        candidate_deadline,
        _pending_deadline("fail"),
        _status(phase=Phase.PENDING, pending_since=LONG_AGO),
        observe(available=False),
        ("Fail", None, None, DEADLINE),
    ),
    (
        "past it: rollback",
        candidate_deadline,
        _pending_deadline("rollback"),
        _status(phase=Phase.PENDING, pending_since=LONG_AGO),
        observe(available=False),
        ("RollBack", None, DEADLINE, None),
    ),
    (
        "already paused at it",
        candidate_deadline,
        _pending_deadline("pause"),
        _paused(PauseReason.PENDING_DEADLINE, pending_since=LONG_AGO),
        observe(available=False),
        (None,),
    ),
    (
        "paused at a deadline",
        deadline_hold,
        SPEC,
        _paused(PauseReason.PENDING_DEADLINE),
        observe(),
        ("Hold", PauseReason.PENDING_DEADLINE, None, None),
    ),
    ("not paused", deadline_hold, SPEC, _status(), observe(), (None,)),
    (
        "candidate not Available",
        candidate_wait,
        SPEC,
        _status(phase=Phase.PENDING),
        observe(available=False),
        ("Hold", None, None, None),
    ),
    ("candidate Available", candidate_wait, SPEC, _status(phase=Phase.PENDING), observe(), (None,)),
    # conflict_hold
    (
        "another writer holds the route",
        conflict_hold,
        SPEC,
        _paused(PauseReason.ROUTE_CONFLICT),
        observe(),
        ("Hold", PauseReason.ROUTE_CONFLICT, None, None),
    ),
    ("no conflict", conflict_hold, SPEC, _status(), observe(), (None,)),
    # capacity: a step waiting to raise its weight holds, raises once there, and its deadline acts
    (
        "short of replicas",
        capacity_wait,
        CAPACITY,
        _status(current_weight=0),
        replace(observe(), ready_replicas=ReadyReplicas(1, 10)),
        ("Hold", None, None, None),
    ),
    (
        "replicas there",
        capacity_wait,
        CAPACITY,
        _status(current_weight=0),
        replace(observe(), ready_replicas=ReadyReplicas(2, 10)),
        ("RaiseWeight", None, None, None),
    ),
    ("the step's weight is live", capacity_wait, CAPACITY, _status(), observe(), (None,)),
    (
        "short past the pending deadline",
        capacity_deadline,
        _with(CAPACITY, progressDeadlines={"pending": {"after": "5m", "action": "fail"}}),
        _status(current_weight=0, pending_since=LONG_AGO),
        replace(observe(), ready_replicas=ReadyReplicas(1, 10)),
        ("Fail", None, None, DEADLINE),
    ),
    (
        "short within it",
        capacity_deadline,
        CAPACITY,
        _status(current_weight=0, pending_since=RECENT),
        replace(observe(), ready_replicas=ReadyReplicas(1, 10)),
        (None,),
    ),
    # a gradual rollback: a breach sets 0 at once; otherwise the step-down's weight now
    (
        "stepping down, a breach",
        rollback_verdict,
        SPEC,
        STEPPING_DOWN,
        _run(Outcome.FAIL),
        ("RollBack", None, Reason.METRIC_BREACH, None),
    ),
    ("stepping down, passing", rollback_verdict, SPEC, STEPPING_DOWN, _run(Outcome.PASS), (None,)),
    ("stepping down", step_down, SPEC, STEPPING_DOWN, observe(live(20)), ("Noted", None, None, None)),
    (
        "rolled back to 0",
        step_down,
        SPEC,
        _status(phase=Phase.ROLLED_BACK),
        observe(),
        ("SetWeight", None, None, None),
    ),
    # window_verdict: the watch window's wait, its end, a held rollback
    ("not watching", window_verdict, SPEC, _status(), observe(), (None,)),
    ("watching", window_verdict, SPEC, WATCHING, observe(live(100)), ("Hold", None, None, None)),
    (
        "the window passed",
        window_verdict,
        SPEC,
        WATCHING.model_copy(update={"watch_ends_at": RECENT}),
        observe(live(100)),
        ("Advance", None, None, None),
    ),
    (
        "a held rollback, incumbent down",
        window_verdict,
        SPEC,
        _paused(
            PauseReason.ROLLBACK_HELD, watch_ends_at=NOW + timedelta(minutes=5), rollback_reason=HELD_ROLLBACK
        ),
        replace(observe(live(100)), incumbent_available=False),
        ("Hold", PauseReason.ROLLBACK_HELD, None, None),
    ),
    (
        "a held rollback, incumbent back",
        window_verdict,
        SPEC,
        _paused(
            PauseReason.ROLLBACK_HELD, watch_ends_at=NOW + timedelta(minutes=5), rollback_reason=HELD_ROLLBACK
        ),
        replace(observe(live(100)), incumbent_available=True),
        ("RollBack", None, Reason.PROMETHEUS_UNAVAILABLE, None),
    ),
]


@pytest.mark.parametrize(
    ("rule", "spec", "status", "observed", "expected"),
    [row[1:] for row in TABLE],
    ids=[f"{row[1].__name__}: {row[0]}" for row in TABLE],
)
def test_a_rule_returns_the_intent_its_state_asks_for(
    rule: Rule,
    spec: ModelRolloutSpec,
    status: ModelRolloutStatus,
    observed: Observations,
    expected: tuple[object, ...],
) -> None:
    assert _shape(_intent(rule, spec, status, observed)) == expected


def test_bookkeeping_returns_what_it_records() -> None:
    """A Pending candidate is asked weight 0 and its availability recorded; in the watch window the
    incumbent's availability is, as data for the engine to fold."""
    pending = _intent(no_traffic_yet, SPEC, _status(phase=Phase.PENDING), observe(available=False))
    assert isinstance(pending, Noted) and pending.effects[0] == AskWeight(0)
    (available,) = [e for e in pending.effects if isinstance(e, SetCondition)]
    assert (available.type, available.ok) == (ConditionType.CANDIDATE_AVAILABLE, False)

    watched = replace(observe(live(100)), incumbent_available=False)
    noted = _intent(window_note, SPEC, WATCHING, watched)
    assert isinstance(noted, Noted)
    assert [(e.type, e.ok) for e in noted.effects if isinstance(e, SetCondition)] == [
        (ConditionType.INCUMBENT_AVAILABLE, False)
    ]
    assert _intent(window_note, SPEC, _status(), watched) is None
