"""The watch window (spec.watch): after the last step the candidate takes all traffic while the analysis
goes on; a breach rolls back to the incumbent, and once the window has passed the rollout Succeeds.

The phase stays Progressing in the window (condition Watching True, `status.watchEndsAt` set), as an
Argo Rollouts rollout stays Progressing through its post-promotion analysis: Argo CD shows it
Progressing, not Healthy, until the window has passed.

A rollback sends every request to the incumbent, so it waits for an incumbent that can serve them:
while the incumbent is not Available, a rollback decided in the window is held (phase Paused, the
reason in rollbackReason, condition IncumbentAvailable False, a RollbackHeld Warning) and the
candidate keeps the traffic it serves, errors and all, rather than all of it going to nothing. It
is carried out at the first tick that finds the incumbent Available; `modelgate abort` carries it out
at once.
"""

from __future__ import annotations

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, PauseReason, Phase, RollbackReason
from modelgate.core.intents import (
    Advance,
    AskWeight,
    BeginPause,
    Effect,
    Hold,
    Intent,
    Noted,
    RollBack,
    Say,
    SetCondition,
    fields,
)
from modelgate.core.moments import moment
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.stage import watching
from modelgate.core.tick import TickView


def in_force(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> ModelRolloutSpec:
    """The spec whose analysis runs now: in the window, with the window's own metrics when it has them."""
    watch, analysis = spec.watch, spec.analysis
    if not watching(status) or watch is None or watch.metrics is None or analysis is None:
        return spec
    return spec.model_copy(update={"analysis": analysis.model_copy(update={"metrics": watch.metrics})})


def opening(tick: TickView) -> tuple[Effect, ...] | None:
    """After the last step: what opens the window when the spec asks for one and it is not open yet;
    None when the rollout is to Succeed now."""
    watch = tick.spec.watch
    if watch is None or tick.status.watch_ends_at is not None:
        return None
    ends_at = tick.now + watch.duration_timedelta
    message = f"every step completed; watching until {moment(ends_at)}"
    return (
        AskWeight(100),
        fields(
            phase=Phase.PROGRESSING,
            current_step_index=len(tick.spec.steps),
            step_started_at=tick.now,
            watch_ends_at=ends_at,
            message=message,
        ),
        SetCondition(ConditionType.WATCHING, True, Reason.WATCH_STARTED, message),
        Say(Reason.WATCH_STARTED, f"{tick.spec.candidate.name} takes all traffic; {message}"),
    )


def window_note(tick: TickView) -> Noted | None:
    """In the window, records whether the incumbent is Available (a rollback would need it)."""
    return Noted((incumbent_condition(tick),)) if watching(tick.status) else None


def window_verdict(tick: TickView) -> Intent:
    """A tick in the window, after its analysis: a held rollback is carried out once the incumbent is
    Available; the window's end is a success (Advance); None outside the window."""
    status = tick.status
    if not watching(status):
        return None
    assert status.watch_ends_at is not None
    held = status.rollback_reason
    if status.phase is Phase.PAUSED and held is not None:
        if tick.observed.incumbent_available:
            cause = Reason.METRIC_BREACH if held.metric is not None else Reason.PROMETHEUS_UNAVAILABLE
            return RollBack(held, cause)
        return Hold(pause=PauseReason.ROLLBACK_HELD)
    if tick.now < status.watch_ends_at:
        return Hold(f"watching until {moment(status.watch_ends_at)}")
    return Advance()


def scales_down_incumbent(spec: ModelRolloutSpec) -> bool:
    """Whether the window's passing scales the incumbent down (spec.watch.scaleDownIncumbent)."""
    return spec.watch is not None and spec.watch.scale_down_incumbent


def closing(tick: TickView, reason: Reason, message: str) -> tuple[Effect, ...]:
    """What closes the window (a success or a rollback); nothing when none is open."""
    if tick.status.watch_ends_at is None:
        return ()
    return fields(watch_ends_at=None), SetCondition(ConditionType.WATCHING, False, reason, message)


def held_rollback(tick: TickView, reason: RollbackReason) -> tuple[bool, tuple[Effect, ...]]:
    """Whether a rollback decided in the window is held while the incumbent is not Available (see
    the module's docstring), and what the window records of it."""
    if not watching(tick.status):
        return False, ()
    incumbent = incumbent_condition(tick)
    if tick.observed.incumbent_available is not False:
        return False, (incumbent,)
    message = (
        f"rollback held: {reason.message}; the incumbent is not Available "
        f"({tick.observed.incumbent_message}), so the candidate keeps its traffic until it is "
        "(or `modelgate abort`)"
    )
    said = (Say(Reason.ROLLBACK_HELD, message),) if tick.status.rollback_reason is None else ()
    held = fields(phase=Phase.PAUSED, rollback_reason=reason, message=message)
    return True, (incumbent, *said, held, BeginPause(PauseReason.ROLLBACK_HELD, message))


def incumbent_condition(tick: TickView) -> SetCondition:
    available = bool(tick.observed.incumbent_available)
    reason = Reason.AVAILABLE if available else Reason.NOT_AVAILABLE
    return SetCondition(ConditionType.INCUMBENT_AVAILABLE, available, reason, tick.observed.incumbent_message)
