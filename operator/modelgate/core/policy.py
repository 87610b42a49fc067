"""The rollout's policy, top to bottom: what a tick records before the policy (bookkeeping), then
the rules of a phase in the order the engine evaluates them. Each rule reads the tick (spec, status,
observations, now) and returns an intent (core/model.py); the first that is not None decides the
tick. A rule that saw something to record returns it as `Noted` effects, which the engine folds
(core/engine.py) before it asks the next rule: no rule writes, and no rule calls another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from modelgate.core.endings import (
    record_rollback_run,
    rollback_verdict,
    step_down,
    window_note,
    window_verdict,
)
from modelgate.core.holds import (
    candidate_deadline,
    capacity_deadline,
    capacity_note,
    capacity_wait,
    conflict_hold,
    deadline_hold,
    inconclusive_deadline,
)
from modelgate.core.judging import analysis_verdict, errors_hold, queries_hold, record_analysis
from modelgate.core.model import (
    Advance,
    AskWeight,
    Effect,
    Hold,
    Intent,
    MemberAvailability,
    Noted,
    Observations,
    SetCondition,
    fields,
)
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.tick import TickView

Rule = Callable[[TickView], Intent | Noted]


def with_groups(observed: Observations) -> Observations:
    """A grouped side (spec.*.members) is Available only when its traffic target and every member
    are; its message then names the first member that is not."""
    candidate = _joined(observed.candidate_available, observed.candidate_message, observed.candidate_members)
    incumbent = _joined(observed.incumbent_available, observed.incumbent_message, observed.incumbent_members)
    return replace(
        observed,
        candidate_available=bool(candidate[0]),
        candidate_message=candidate[1],
        incumbent_available=incumbent[0],
        incumbent_message=incumbent[1],
    )


def _joined(
    available: bool | None, message: str, members: tuple[MemberAvailability, ...]
) -> tuple[bool | None, str]:
    missing = next((member for member in members if not member.available), None)
    if not available or missing is None:  # not read (None), or the target already says why
        return available, message
    return False, f"member {missing.role} ({missing.field}) is not Available: {missing.message}"


def no_traffic_yet(tick: TickView) -> Noted:
    """Bookkeeping: a Pending candidate gets weight 0, and whether it is Available."""
    return Noted((AskWeight(0), *candidate_availability(tick)))


def candidate_wait(tick: TickView) -> Intent:
    """Waits for the candidate to be Available (candidate_deadline, before, acts on its deadline)."""
    if tick.observed.candidate_available:
        return None
    return Hold(f"waiting for the candidate: {tick.observed.candidate_message}")


def reassert_weight(tick: TickView) -> Noted:
    """Records: the weight this step wrote is asked again (should it have drifted), and whether the
    candidate is Available."""
    return Noted((AskWeight(tick.status.current_weight), *candidate_availability(tick)))


def advance(tick: TickView) -> Intent:
    return Advance()


def candidate_availability(tick: TickView) -> tuple[Effect, ...]:
    available = tick.observed.candidate_available
    reason = Reason.AVAILABLE if available else Reason.NOT_AVAILABLE
    return (
        fields(candidate_available=available),
        SetCondition(ConditionType.CANDIDATE_AVAILABLE, available, reason, tick.observed.candidate_message),
    )


PENDING_BOOKKEEPING: tuple[Rule, ...] = (no_traffic_yet,)
PENDING: tuple[Rule, ...] = (
    conflict_hold,
    deadline_hold,
    candidate_deadline,  # the candidate not Available past spec.progressDeadlines.pending
    candidate_wait,
    queries_hold,  # no weight before every query of the analysis answers
    advance,  # to the gate, or to step 0
)

STEPPING_BOOKKEEPING: tuple[Rule, ...] = (record_analysis,)  # the analysis run, judged before
STEPPING: tuple[Rule, ...] = (  # Progressing or Paused, in a step or in the watch window
    analysis_verdict,  # a breach rolls back before anything else
    conflict_hold,
    reassert_weight,
    errors_hold,
    deadline_hold,
    inconclusive_deadline,
    queries_hold,
    window_note,
    window_verdict,
    capacity_note,
    capacity_deadline,  # a step waiting for capacity counts against the pending deadline
    capacity_wait,
    advance,  # through the completed steps
)

ROLLED_BACK_BOOKKEEPING: tuple[Rule, ...] = (record_rollback_run,)  # a gradual rollback is watched
ROLLED_BACK: tuple[Rule, ...] = (
    rollback_verdict,  # a breach during the step-down sets 0 at once
    step_down,  # 0, or the step-down's weight now
)
