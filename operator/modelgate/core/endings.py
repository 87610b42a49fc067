"""How a rollout ends other than by a step's verdict: the watch window after the last step, a
gradual rollback, a spec the operator cannot use (or a policy it cannot resolve), and a tick that
raised what the operator does not expect (the fail-safe's decision).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from modelgate.api import (
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RollbackReason,
    RollingBack,
    RolloutPause,
    RolloutRef,
)
from modelgate.api import internal_error_status as api
from modelgate.api.candidate_patch import AfterPromotion
from modelgate.core import reasons
from modelgate.core.actions import decide_deletion, returned_actions, warned
from modelgate.core.model import (
    Advance,
    AskWeight,
    BeginPause,
    ChangeGenerated,
    Decision,
    Effect,
    Event,
    Hold,
    Intent,
    LiveRoute,
    Noted,
    Observations,
    Outcome,
    RollBack,
    RouteProblem,
    Say,
    ScaleDownIncumbent,
    SetCondition,
    SetWeight,
    SpecProblem,
    WriteRoute,
    fields,
)
from modelgate.core.reasons import ConditionType, Reason, moment, set_condition
from modelgate.core.results import GeneratedChange, GeneratedObjects
from modelgate.core.tick import TickView, note_history, watching

# -- watch_window ----------------------------------------------------------------------------------
# The watch window (spec.watch): after the last step the candidate takes all traffic while the analysis goes
# on; a breach rolls back to the incumbent, and once the window has passed the rollout Succeeds.
#
# The phase stays Progressing in the window (condition Watching True, `status.watchEndsAt` set), as an Argo
# Rollouts rollout stays Progressing through its post-promotion analysis: Argo CD shows it Progressing, not
# Healthy, until the window has passed.
#
# A rollback sends every request to the incumbent, so it waits for an incumbent that can serve them: while the
# incumbent is not Available, a rollback decided in the window is held (phase Paused, the reason in
# rollbackReason, condition IncumbentAvailable False, a RollbackHeld Warning) and the candidate keeps the
# traffic it serves, errors and all, rather than all of it going to nothing. It is carried out at the first
# tick that finds the incumbent Available; `modelgate abort` carries it out at once.


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
    """Whether the window's passing scales the incumbent down (spec.watch.scaleDownIncumbent). Never
    for a one-edit rollout promoted into its incumbent: the incumbent takes the patch and then the
    traffic (a policy's watch may ask for it; scaled to 0, it could never take either)."""
    patch = spec.candidate_patch
    if patch is not None and patch.after_promotion is AfterPromotion.PROMOTE_INTO_INCUMBENT:
        return False
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


# -- gradual ---------------------------------------------------------------------------------------
# Gradual rollback (spec.rollback.gradual): instead of 0 at once, the candidate's weight falls linearly from
# where it was to 0 over the duration, for incumbents that need to warm their caches.
#
# Which rollbacks step down: `modelgate abort` and a progress deadline's rollback, which say nothing against
# the candidate's answers. A metric breach, before or during the step-down, sets 0 at once; so does a rollback
# on Prometheus errors (chosen because running the candidate blind is the risk, and a step-down would go on
# blind, where no breach could stop it) and a second `modelgate abort`.
#
# The weight is computed from status.rollingBack and `now` alone, so a restarted operator carries on where it
# was; the phase is RolledBack from the start (the decision is taken), with rollingBack set until the weight
# reaches 0.


GRADUAL_CAUSES = frozenset({Reason.ABORTED, Reason.PROGRESS_DEADLINE_EXCEEDED})
# A step-down is looked at this often at most: one weight write a second, whatever the duration.
STEP_INTERVAL = timedelta(seconds=1)


def gradual_start(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, cause: Reason, now: datetime
) -> RollingBack | None:
    """The step-down a rollback for `cause` begins, or None when it sets 0 at once."""
    gradual = spec.rollback.gradual
    stepping = status.phase in (Phase.PROGRESSING, Phase.PAUSED) and status.current_weight > 0
    if gradual is None or cause not in GRADUAL_CAUSES or not stepping:
        return None
    return RollingBack(
        started_at=now, from_weight=status.current_weight, ends_at=now + gradual.duration_timedelta
    )


def weight_at(rolling: RollingBack, now: datetime) -> int:
    """The candidate's weight at `now`: on the line from fromWeight at startedAt to 0 at endsAt,
    rounded up to a whole percent, so that it reaches 0 at endsAt and not before."""
    total = _microseconds(rolling.ends_at - rolling.started_at)
    left = _microseconds(rolling.ends_at - now)
    if left <= 0 or total <= 0:
        return 0
    return min(rolling.from_weight, -(-rolling.from_weight * left // total))


def next_step_at(status: ModelRolloutStatus, now: datetime) -> datetime | None:
    """When the weight next falls by a whole percent (no sooner than STEP_INTERVAL, no later than
    endsAt); None when no step-down is under way."""
    rolling = status.rolling_back
    if rolling is None or rolling.from_weight == 0:
        return None
    below = weight_at(rolling, now) - 1  # the weight falls below its current value once left <= this
    total = rolling.ends_at - rolling.started_at
    falls_at = rolling.ends_at - total * below / rolling.from_weight
    return min(max(falls_at, now + STEP_INTERVAL), max(rolling.ends_at, now))


def record_rollback_run(tick: TickView) -> Noted | None:
    """Bookkeeping of a gradual rollback's tick: the analysis run that watched it, if one ran (a
    breach ends the step-down: rollback_verdict sets 0)."""
    run, result = tick.observed.analysis, tick.analysed
    if tick.status.rolling_back is None or run is None or result is None:
        return None
    ended = {"rolling_back": None} if result.breach is not None else {}
    return Noted((fields(analysis=result.metrics, last_analysis_at=run.at, **ended),))


def rollback_verdict(tick: TickView) -> Intent:
    """A breach during a gradual rollback sets 0 at once (the engine judges a run only while the
    rollout steps down)."""
    result = tick.analysed
    if tick.observed.analysis is None or result is None or result.breach is None:
        return None
    return RollBack(result.breach, Reason.METRIC_BREACH)


def step_down(tick: TickView) -> Intent | Noted:
    """A RolledBack rollout's tick: 0, or the step-down's weight now (written even over another
    writer's, as a rollback is)."""
    rolling = tick.status.rolling_back
    if rolling is None:
        return SetWeight(0)
    weight = weight_at(rolling, tick.now)
    if weight == 0:
        complete = "the gradual rollback is complete: the candidate's weight is 0"
        done = fields(rolling_back=None, message=f"rolled back: {_reason(tick)}")
        return Noted((AskWeight(0, even_when_held=True), done, Say(Reason.ROLLBACK_COMPLETED, complete)))
    message = fields(message=step_down_message(weight, rolling, _reason(tick)))
    return Noted((AskWeight(weight, even_when_held=True), message))


def step_down_message(weight: int, rolling: RollingBack, reason: str) -> str:
    return f"rolling back gradually: candidate weight {weight}, 0 at {moment(rolling.ends_at)}: {reason}"


def _reason(tick: TickView) -> str:
    reason = tick.status.rollback_reason
    return "" if reason is None else reason.message


def _microseconds(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


# -- unusable --------------------------------------------------------------------------------------
# A spec the operator cannot use (what the CRD could not catch): the rollout ends Failed, naming the field,
# and its candidate's traffic goes back to the incumbent.


def decide_unusable(
    problem: SpecProblem, status: ModelRolloutStatus, generation: int, now: datetime
) -> Decision:
    """A spec the operator cannot use, naming the field. An active rollout ends Failed and its
    candidate's traffic goes back to the incumbent (weight 0, asked until the route carries it);
    a finished one (Succeeded, RolledBack) keeps its phase and weight. Said once: the same problem
    again only asks for the weight that is not live yet."""
    message = reasons.clip(problem.message, reasons.STATUS_MESSAGE)
    finished = status.phase in (Phase.SUCCEEDED, Phase.ROLLED_BACK)
    update: dict[str, object] = {"message": message, "observed_generation": generation}
    if not finished:
        held = status.pause is not None and status.pause.reason is PauseReason.ROUTE_CONFLICT
        update |= {"phase": Phase.FAILED, "current_weight": 0, "pause": status.pause if held else None}
    unusable = note_history(status, status.model_copy(update=update), now)
    route = None if finished or status.live_weight == 0 else WriteRoute(0, 0, warned(status))
    if status.message == message and (finished or status.phase is Phase.FAILED):
        return Decision(unusable, returned_actions(unusable, route, (), None))
    outcome = None if finished or status.phase is Phase.FAILED else Outcome(Phase.FAILED, Reason.INVALID_SPEC)
    events = (Event(Reason.INVALID_SPEC, problem.message),)
    return Decision(unusable, returned_actions(unusable, route, events, outcome))


def decide_policy_unresolved(
    problem: SpecProblem, status: ModelRolloutStatus, generation: int, now: datetime
) -> Decision:
    """spec.policyRef names a policy that is missing or does not resolve, and no plan is pinned: the
    rollout holds in Pending with the candidate at weight 0 (asked until the route carries it), paused
    PolicyUnresolved naming the policy, until a tick resolves it (policy_plans.py ends the pause)."""
    message = reasons.clip(problem.message, reasons.STATUS_MESSAGE)
    held = status.pause is not None and status.pause.reason is PauseReason.POLICY_UNRESOLVED
    pause = RolloutPause(
        reason=PauseReason.POLICY_UNRESOLVED,
        since=status.pause.since if held and status.pause is not None else now,
        message=reasons.clip(problem.message, reasons.ANALYSIS_MESSAGE),
    )
    update: dict[str, object] = {
        "message": message,
        "observed_generation": generation,
        "phase": Phase.PENDING,
        "current_weight": 0,
        "pause": pause,
    }
    holding = status.model_copy(update=update)
    route = None if status.live_weight == 0 else WriteRoute(0, 0, warned(status))
    said = held and status.pause is not None and status.pause.message == pause.message
    events = () if said else (Event(Reason.POLICY_UNRESOLVED, problem.message),)
    return Decision(holding, returned_actions(holding, route, events, None))


# -- internal_error --------------------------------------------------------------------------------
# A tick that raised what the operator does not expect (a bug): the fail-safe's decision. Like a spec the
# operator cannot use (core/endings.py), the rollout ends Failed and its candidate's traffic goes back to the
# incumbent; nothing else of the tick is trusted, so nothing else is decided.


@dataclass(frozen=True)
class TickError:
    """The exception a tick raised: its type's name and its message."""

    kind: str
    detail: str

    def status(self, now: datetime) -> api.InternalError:
        detail = reasons.clip(self.detail, reasons.ANALYSIS_MESSAGE)
        return api.InternalError(time=now, type=reasons.clip(self.kind, reasons.ERROR_TYPE), message=detail)

    @property
    def message(self) -> str:
        returned = "the candidate's traffic returned"
        return f"internal error in the operator (a bug), {returned}: {self.kind}: {self.detail}"


def decide_internal_error(
    error: TickError, status: ModelRolloutStatus, generation: int, now: datetime
) -> Decision:
    """A Succeeded rollout keeps its phase and weight (its candidate is what serves now). Any other
    ends Failed with the candidate's weight and mirror at 0, asked until the route carries them (a
    rolled-back one too: a gradual rollback is not left half-way), the Completed condition saying
    InternalError. Said once: the same error again only asks for what is not live yet."""
    message = reasons.clip(error.message, reasons.STATUS_MESSAGE)
    if status.phase is Phase.SUCCEEDED:
        kept = note_history(status, status.model_copy(update={"message": message}), now)
        return Decision(kept, returned_actions(kept, None, (), None))
    held = status.pause is not None and status.pause.reason is PauseReason.ROUTE_CONFLICT
    conditions = set_condition(
        status.conditions,
        ConditionType.COMPLETED,
        False,
        Reason.INTERNAL_ERROR,
        reasons.clip(error.message, reasons.CONDITION_MESSAGE),
        now,
        generation,
    )
    update = {
        "phase": Phase.FAILED,
        "message": message,
        "observed_generation": generation,
        "current_weight": 0,
        "current_mirror_percent": 0,
        "rolling_back": None,
        "pause": status.pause if held else None,
        "conditions": conditions,
        "internal_error": _kept(status.internal_error, error.status(now)),
    }
    failed = note_history(status, status.model_copy(update=update), now)
    returned = status.live_weight == 0 and not status.live_mirror_percent
    route = None if returned else WriteRoute(0, 0, warned(status))
    if status.phase is Phase.FAILED and status.message == message:
        return Decision(failed, returned_actions(failed, route, (), None))
    outcome = None if status.phase is Phase.FAILED else Outcome(Phase.FAILED, Reason.INTERNAL_ERROR)
    events = (Event(Reason.INTERNAL_ERROR, error.message),)
    return Decision(failed, returned_actions(failed, route, events, outcome))


def _kept(said: api.InternalError | None, now: api.InternalError) -> api.InternalError:
    """The error said before, with its time, if it is the same one."""
    if said is not None and (said.type, said.message) == (now.type, now.message):
        return said
    return now


# -- one_edit --------------------------------------------------------------------------------------
# A one-edit rollout (spec.candidatePatch): the operator generates the candidate's Deployment, Service and
# backendRef (at weight 0) while the rollout runs, and removes them once the candidate's traffic is back on
# the incumbent (RolledBack, Failed) or on deletion. After Succeeded, PromoteIntoIncumbent patches the
# incumbent, returns the traffic to it once every replica is updated and available, and then removes the
# rest; RetireIncumbent releases the candidate (it outlives the rollout) and scales the incumbent to 0.
# Each change is asked for while the observation says it is not done, so a tick that fails half-way is
# carried on.


@dataclass(frozen=True)
class GeneratedPlan:
    """A tick's changes to what is generated, the candidate weight to write instead of the engine's,
    whether the finalizer stays for what is left to remove on deletion, and, once promoted, the status
    message saying which workload serves (None: the engine's). `handed_back`: the promoted patch is
    the incumbent's, which takes the traffic back; the candidate's weight in status is then 0."""

    changes: tuple[ChangeGenerated | ScaleDownIncumbent, ...]
    weight: int | None
    keeps_finalizer: bool
    message: str | None = None
    handed_back: bool = False


ENDED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)


def generated_plan(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, weight: int | None
) -> GeneratedPlan:
    """What a one-edit rollout's tick, which came to `status` and would write `weight`, does to what
    is generated; nothing for any other rollout."""
    patch, generated = spec.candidate_patch, observed.generated
    if patch is None or generated is None:
        return GeneratedPlan((), weight, False)
    keeps = generated.leftover
    if status.phase not in ENDED:
        return GeneratedPlan(_changes(not generated.complete, GeneratedChange.CREATE), weight, True)
    if status.phase is not Phase.SUCCEEDED:
        # Nothing reaches the candidate any more, mirrored copies included, before it is removed.
        returned = status.rolling_back is None and status.live_weight == 0 and not status.live_mirror_percent
        return GeneratedPlan(_changes(returned and generated.leftover, GeneratedChange.REMOVE), weight, keeps)
    candidate, incumbent = spec.candidate.name, spec.incumbent.name
    if patch.after_promotion is AfterPromotion.RETIRE_INCUMBENT:
        release = _changes(generated.owned and generated.deployment, GeneratedChange.RELEASE)
        retire = () if generated.incumbent_scaled_down else (ScaleDownIncumbent(incumbent),)
        said = f"{candidate} takes all traffic; the incumbent {incumbent} is retired (scaled to 0)"
        return GeneratedPlan((*release, *retire), weight, keeps, said)
    rolling = f"{candidate} takes all traffic while the incumbent {incumbent} rolls out the promoted patch"
    if not generated.incumbent_patched:
        return GeneratedPlan(_changes(True, GeneratedChange.PATCH_INCUMBENT), weight, keeps, rolling)
    if not generated.incumbent_rolled_out:
        return GeneratedPlan((), weight, keeps, rolling)  # the candidate serves until the incumbent can
    said = f"the incumbent {incumbent} carries the promoted patch and takes all traffic"
    if status.live_weight:  # the traffic back to the patched incumbent, then the rest goes
        return GeneratedPlan((), 0, keeps, said, handed_back=True)
    remove = _changes(generated.leftover, GeneratedChange.REMOVE)
    return GeneratedPlan(remove, None, keeps, said, handed_back=True)


def _changes(wanted: bool, change: GeneratedChange) -> tuple[ChangeGenerated, ...]:
    return (ChangeGenerated(change),) if wanted else ()


def decide_generated_deletion(
    spec: ModelRolloutSpec | None,
    status: ModelRolloutStatus,
    route: LiveRoute | RouteProblem | None,
    has_finalizer: bool,
    owner: RolloutRef | None = None,
    generated: GeneratedObjects | None = None,
) -> Decision:
    """A rollout being deleted (core/actions.py's decide_deletion); one-edit, whatever it generated is
    removed too (a released candidate excepted), after the candidate's weight is back at 0."""
    patched = spec is not None and spec.candidate_patch is not None
    leftover = patched and generated is not None and generated.leftover
    decided = decide_deletion(spec, status, route, has_finalizer, owner, generated=leftover)
    if not has_finalizer or not leftover:
        return decided
    remove = ChangeGenerated(GeneratedChange.REMOVE)
    *before, last = decided.actions
    return replace(decided, actions=(*before, remove, last))
