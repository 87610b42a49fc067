"""Manual commands (promote, abort, resume, retry; repin without a policy) within a tick; each ends
Applied or Ignored in `status.lastCommand`, which is what the CLI reads.
"""

from __future__ import annotations

from modelgate.api import CommandResult, LastCommand, PauseReason, Phase, RollbackReason
from modelgate.api.pause import RESUMABLE
from modelgate.core import reasons
from modelgate.core.endings import gradual_start
from modelgate.core.holds import releasing
from modelgate.core.judging import gate_command
from modelgate.core.model import (
    COMMAND_ANNOTATION,
    BeginPause,
    Command,
    CommandAction,
    Effect,
    EndPause,
    EnterStep,
    Fields,
    Intent,
    RollBack,
    Say,
    SetCondition,
    StartOver,
    StepNote,
    Succeed,
    UnreadableCommand,
    fields,
)
from modelgate.core.reasons import ConditionType, Reason, moment
from modelgate.core.tick import TickView

UNREADABLE = "unreadable"  # status.lastCommand.name of an annotation that is not a command

COMMAND_SHAPE = '{"action": "<action>", "id": "<id>"}'


def handle_command(tick: TickView, command: Command | UnreadableCommand) -> tuple[Intent, tuple[Effect, ...]]:
    """The transition the command asks for, if any, and what it records (status.lastCommand first
    among them), for the engine to fold before it carries the transition out."""
    if isinstance(command, UnreadableCommand):
        return None, _ignore(tick, command.id, UNREADABLE, unreadable_message(command))
    applied = _apply(tick, command.action)
    if applied is None:
        message = _not_applicable_message(tick, command.action)
        return None, _ignore(tick, command.id, command.action.value, message)
    intent, message, effects = applied
    return intent, (*effects, _record(tick, command.id, command.action.value, CommandResult.APPLIED, message))


def command_that_applies(tick: TickView, refused: CommandAction) -> CommandAction | None:
    """The command that applies where `refused` does not, for its message; None where none does
    (the rollout Succeeded, or is Pending and waits for its incumbent)."""
    phase = tick.status.phase
    if phase in (Phase.ROLLED_BACK, Phase.FAILED):
        return CommandAction.RETRY
    if tick.paused_by(*RESUMABLE):
        return CommandAction.RESUME
    if phase is Phase.PAUSED and tick.at_indefinite_pause:
        return CommandAction.PROMOTE
    if refused is CommandAction.RETRY and phase in (Phase.PENDING, Phase.PROGRESSING, Phase.PAUSED):
        return CommandAction.ABORT
    if phase is Phase.PROGRESSING:
        return CommandAction.PROMOTE
    return None


# What the command that applies does, in the message that points at it.
APPLIES_BY = {
    CommandAction.RETRY: "starts it again from step 0",
    CommandAction.RESUME: "ends this pause",
    CommandAction.PROMOTE: "finishes the current step",
    CommandAction.ABORT: "rolls it back (retry applies after a rollback)",
}
NONE_APPLIES = {
    Phase.SUCCEEDED: "the rollout has ended; apply a new spec.candidate to start another",
    Phase.PENDING: "it waits for the incumbent to be Available; `modelgate abort` ends it",
}


def _not_applicable_message(tick: TickView, action: CommandAction) -> str:
    if action is CommandAction.REPIN:  # with spec.policyRef, policy_plans.py handles it
        return "`modelgate repin` applies only to a rollout with spec.policyRef: this one names no policy"
    phase = tick.status.phase
    pause = tick.status.pause
    refused = f"`modelgate {action}` does not apply in phase {phase}"
    refused += "" if pause is None else f" ({pause.reason})"
    instead = command_that_applies(tick, action)
    if instead is None:
        return f"{refused}: {NONE_APPLIES.get(phase or Phase.PENDING, 'no command does')}"
    return f"{refused}; `modelgate {instead}` {APPLIES_BY[instead]}"


def unreadable_message(command: UnreadableCommand) -> str:
    actions = ", ".join(action.value for action in CommandAction)
    value = reasons.clip(command.value, 200)
    return (
        f"annotation {COMMAND_ANNOTATION} ignored: its value {value!r} {command.problem}; expected JSON "
        f"{COMMAND_SHAPE} with action one of {actions}, as `modelgate promote|abort|resume|retry|repin` "
        "writes it"
    )


def _ignore(tick: TickView, command_id: str, name: str, message: str) -> tuple[Effect, ...]:
    return Say(Reason.COMMAND_IGNORED, message), _record(
        tick, command_id, name, CommandResult.IGNORED, message
    )


def _record(tick: TickView, command_id: str, name: str, result: CommandResult, message: str) -> Fields:
    return fields(
        last_command=LastCommand(
            id=command_id,
            name=name,
            result=result,
            message=reasons.clip(message, reasons.ANALYSIS_MESSAGE),
            time=tick.now,
        )
    )


def _apply(tick: TickView, action: CommandAction) -> tuple[Intent, str, tuple[Effect, ...]] | None:
    """What the command asks of the tick, what it did and what it records, or None when it does not
    apply in the rollout's phase."""
    phase = tick.status.phase
    if phase is Phase.GATING:
        return gate_command(tick, action)
    active = phase in (Phase.PROGRESSING, Phase.PAUSED)
    if action is CommandAction.ABORT and tick.status.rolling_back is not None:
        # A second abort ends a gradual rollback: all traffic to the incumbent now.
        at_once = "rolled back at once: all traffic to the incumbent"
        return RollBack(_aborted(tick), Reason.ABORTED), at_once, (fields(rolling_back=None),)
    if action is CommandAction.ABORT and (active or phase in (Phase.PENDING, Phase.FAILED)):
        return RollBack(_aborted(tick), Reason.ABORTED), _abort_message(tick), ()
    if action is CommandAction.RETRY and phase in (Phase.ROLLED_BACK, Phase.FAILED):
        retrying = f"retrying {tick.spec.candidate.name} from step 0"
        return StartOver(Reason.RETRY, retrying), "started again from step 0", ()
    if action is CommandAction.RESUME and tick.paused_by(*RESUMABLE):
        return None, *_resume(tick)
    if action is CommandAction.PROMOTE_FULL and active:
        said = Say(Reason.PROMOTED, "`modelgate promote --full`: skipping the remaining steps")
        released = releasing(tick, "`modelgate promote --full`")
        return Succeed(), "skipped the remaining steps: the candidate takes all traffic", (*released, said)
    if action is CommandAction.PROMOTE and active and not tick.error_paused:
        index = tick.status.current_step_index
        said = Say(Reason.PROMOTED, f"`modelgate promote`: step {index} finished by hand")
        released = releasing(tick, "`modelgate promote`")
        return (
            EnterStep(index + 1, through_complete=False),
            f"step {index} finished by hand",
            (*released, said),
        )
    return None


def _aborted(tick: TickView) -> RollbackReason:
    return RollbackReason(time=tick.now, message="aborted by `modelgate abort`")


def _abort_message(tick: TickView) -> str:
    """What an abort does: at once, or a gradual step-down where spec.rollback asks for one."""
    rolling = gradual_start(tick.spec, tick.status, Reason.ABORTED, tick.now)
    if rolling is not None:
        return f"rolling back gradually: the candidate's weight reaches 0 at {moment(rolling.ends_at)}"
    return "rolled back: all traffic to the incumbent"


def _resume(tick: TickView) -> tuple[str, tuple[Effect, ...]]:
    """Ends a pause `modelgate resume` ends (status.pause): back to what the step itself does."""
    phase = tick.status.phase
    released = releasing(tick, "`modelgate resume`")
    if phase not in (Phase.PENDING, Phase.PROGRESSING, Phase.PAUSED):
        # A finished rollout held for another writer: its weight is written again.
        said = Say(Reason.RESUMED, "resumed by `modelgate resume`: writing the weight again")
        return "writing the weight again", (*released, said)
    # An indefinite pause still waits for `modelgate promote`; the progress deadlines count again from now.
    pending = phase is Phase.PENDING
    indefinite = tick.at_indefinite_pause and not pending
    resumed: list[Effect] = [
        *released,
        EndPause(tuple(RESUMABLE)),
        fields(
            phase=phase if pending else Phase.PAUSED if indefinite else Phase.PROGRESSING,
            consecutive_prometheus_errors=0,
            pending_since=tick.now if pending else None,
            inconclusive_since=None,
        ),
    ]
    if indefinite:
        index = tick.status.current_step_index
        resumed += [
            StepNote("paused until `modelgate promote`"),
            BeginPause(PauseReason.INDEFINITE_STEP, f"step {index} pauses until `modelgate promote`"),
        ]
    message = "resumed by `modelgate resume`"
    resumed += [
        SetCondition(ConditionType.ANALYSIS_HEALTHY, False, Reason.RESUMED, message),
        Say(Reason.RESUMED, message),
    ]
    return "resumed", tuple(resumed)
