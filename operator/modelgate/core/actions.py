"""Every effect of a tick as an action in its Decision, in the order it is applied.

Every effect of a tick as an action in its Decision, in the order the reconciler applies them:
the finalizer first when the rollout needs one (nothing is written before it); a rollback's weight
before anything else, any other weight after the status that names its step; a breach's evidence;
the Events; the status; the gate's Jobs; the incumbent scaled down; the command cleared; the
finalizer removed when no longer needed. What a route write returned and what a breach's evidence
says are folded into the actions after them: `after_write`, `after_evidence`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase
from modelgate.core.deletion import after_returning, finalizer_wanted
from modelgate.core.evidence import BreachEvidence, with_evidence
from modelgate.core.model import (
    Action,
    ClearCommand,
    CollectEvidence,
    Decision,
    DeleteGateJobs,
    Event,
    Notify,
    Observations,
    PostEvents,
    RemoveFinalizer,
    ScaleDownIncumbent,
    SetFinalizer,
    StartGateChecks,
    WriteResult,
    WriteRoute,
    WriteStatus,
)
from modelgate.core.notifying import notify_actions
from modelgate.core.reasons import Reason
from modelgate.core.writes import settle, warned


@dataclass(frozen=True)
class TickEffects:
    """What a tick asks for besides its status: the candidate weight to write (None: leave the route
    alone; the mirror written with it is the status's), its Events, whether it rolled back, and
    whether the watch window passed with the incumbent to be scaled down."""

    weight: int | None
    events: tuple[Event, ...]
    rolls_back: bool
    scale_down_incumbent: bool


def tick_actions(
    spec: ModelRolloutSpec,
    before: ModelRolloutStatus,
    observed: Observations,
    status: ModelRolloutStatus,
    effects: TickEffects,
) -> tuple[Action, ...]:
    """The actions of a tick that started from `before` and came to `status` asking for `effects`."""
    wanted = finalizer_wanted(spec, status)
    actions: list[Action] = [SetFinalizer()] if wanted and not observed.has_finalizer else []
    route = None
    if effects.weight is not None:
        route = WriteRoute(effects.weight, status.current_mirror_percent, warned(before))
    rolled_back = effects.rolls_back
    actions += route_actions(
        status, route, effects.events, step_first=not rolled_back, rolled_back=rolled_back
    )
    actions += _gate_jobs(before, status)
    if effects.scale_down_incumbent:
        actions.append(ScaleDownIncumbent(spec.incumbent.name))
    command, handled = observed.command, status.last_command
    if command is not None and handled is not None and handled.id == command.id:
        actions.append(ClearCommand(command.id))
    if observed.has_finalizer and not wanted:
        actions.append(RemoveFinalizer())
    # Last: each pending transition is in the status written above, so a crash before its delivery
    # leaves it there for the next tick.
    actions += notify_actions(spec, status, observed)
    return tuple(actions)


def route_actions(
    status: ModelRolloutStatus,
    route: WriteRoute | None,
    events: tuple[Event, ...],
    *,
    step_first: bool,
    rolled_back: bool = False,
) -> list[Action]:
    """The route write, the evidence of a breach this tick `rolled_back` on, the Events and the
    status. `step_first`: the status that names the step is written before its weight (a rollback's
    0, or that of a spec that cannot be used, goes first)."""
    actions: list[Action] = []
    if route is not None:
        if step_first:
            # The step first, then its weight: an operator that dies in between finds the new step
            # in status and writes its weight, rather than the previous step's back.
            actions.append(WriteStatus(status, may_wait=False))
        actions.append(route)
    reason = status.rollback_reason
    if rolled_back and reason is not None and reason.metric is not None:
        actions.append(CollectEvidence(reason))
    if events:
        actions.append(PostEvents(events))
    actions.append(WriteStatus(status, may_wait=True))
    return actions


def returned_actions(
    status: ModelRolloutStatus, route: WriteRoute | None, events: tuple[Event, ...]
) -> tuple[Action, ...]:
    """The actions of a rollout failed without the engine (core/unusable.py, core/internal_error.py):
    its candidate's traffic returned first, its Events, its status."""
    return tuple(route_actions(status, route, events, step_first=False))


def _gate_jobs(before: ModelRolloutStatus, after: ModelRolloutStatus) -> list[Action]:
    """Started while the gate runs, deleted once it has decided (their evidence is in status)."""
    gate = after.gate
    if gate is None:
        return []
    if after.phase is Phase.GATING:
        return [StartGateChecks(gate)]
    if before.phase is Phase.GATING and gate.decision is not None:
        return [DeleteGateJobs(gate)]
    return []


def after_write(decision: Decision, written: WriteResult, now: datetime) -> Decision:
    """The decision once its route write returned `written`, folded into the actions after it: what
    is live goes to the status they write; a write that did not take is a Warning among their Events
    and a retry (a deletion's: its finalizer stays, core/deletion.py)."""
    index, route = next((i, a) for i, a in enumerate(decision.actions) if isinstance(a, WriteRoute))
    if any(isinstance(action, RemoveFinalizer) and action.once_returned for action in decision.actions):
        return after_returning(decision, route, written)
    settled = settle(decision.status, route, written, now, decision.wake_at)
    warning = () if settled.warning is None else (settled.warning,)
    folded = _carried_after(decision, index, settled.status, lambda events: (*events, *warning))
    return dataclasses.replace(folded, wake_at=settled.wake_at)


def after_evidence(decision: Decision, evidence: BreachEvidence) -> Decision:
    """The decision once the metric provider told a breach's `evidence`: in the rollback's reason in
    status and at the end of its RolledBack Event."""
    status, evidenced = with_evidence(decision.status, evidence.traces, evidence.pods)
    index = next(i for i, action in enumerate(decision.actions) if isinstance(action, CollectEvidence))
    return _carried_after(decision, index, status, lambda events: tuple(map(evidenced, events)))


def _carried_after(
    decision: Decision,
    index: int,
    status: ModelRolloutStatus,
    events_of: Callable[[tuple[Event, ...]], tuple[Event, ...]],
) -> Decision:
    """The decision whose actions after the one at `index` carry `status` where they carry the status,
    and post the Events `events_of` makes of theirs (those it adds to none: just before the status
    is written). The actions up to `index` are applied already."""
    actions = list(decision.actions[: index + 1])
    for action in decision.actions[index + 1 :]:
        match action:
            case PostEvents(events=events):
                action = PostEvents(events_of(events))
            case WriteStatus(may_wait=may_wait):
                if may_wait and not any(isinstance(a, PostEvents) for a in decision.actions):
                    actions += [PostEvents(added)] if (added := events_of(())) else []
                action = WriteStatus(status, may_wait)
            case Notify():
                action = dataclasses.replace(action, status=status)
        actions.append(action)
    return dataclasses.replace(decision, status=status, actions=tuple(actions))


def scale_down_event(deployment: str, error: str | None) -> Event:
    """What scaling the incumbent down came to: tried once; a failure (e.g. the chart did not grant
    deployments/scale) is a Warning, and the rollout stays Succeeded."""
    if error is not None:
        message = f"could not scale the incumbent Deployment {deployment} to 0: {error}"
        return Event(Reason.SCALE_DOWN_FAILED, message)
    message = f"the watch window passed: incumbent Deployment {deployment} scaled to 0 replicas"
    return Event(Reason.SCALED_DOWN, message)
