"""Every effect of a tick as an action in its Decision, in the order it is applied.

Every effect of a tick as an action in its Decision, in the order the reconciler applies them:
the finalizer first when the rollout needs one (nothing is written before it); a rollback's weight
before anything else, any other weight after the status that names its step; a breach's evidence;
the Events; the status; the gate's Jobs; the incumbent scaled down; the command cleared; the
finalizer removed when no longer needed. What follows a route write is `after_write`."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase
from modelgate.core.deletion import after_returning, finalizer_wanted
from modelgate.core.events import events_to_post
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


def tick_actions(
    decision: Decision, spec: ModelRolloutSpec, before: ModelRolloutStatus, observed: Observations
) -> tuple[Action, ...]:
    """The actions of a tick that started from `before` and came to `decision`."""
    status = decision.status
    wanted = finalizer_wanted(spec, status)
    actions: list[Action] = [SetFinalizer()] if wanted and not observed.has_finalizer else []
    actions += _route_and_status(decision, before, step_first=not rolls_back(decision))
    actions += _gate_jobs(before, status)
    if decision.scale_down_incumbent:
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


def route_actions(decision: Decision, before: ModelRolloutStatus) -> Decision:
    """The decision with the route, Events and status actions alone (a spec that cannot be used: its
    weight is 0, written first like a rollback's)."""
    actions = _route_and_status(decision, before, step_first=False)
    return dataclasses.replace(decision, actions=tuple(actions))


def rolls_back(decision: Decision) -> bool:
    return decision.outcome is not None and decision.outcome.phase is Phase.ROLLED_BACK


def _route_and_status(decision: Decision, before: ModelRolloutStatus, *, step_first: bool) -> list[Action]:
    status = decision.status
    actions: list[Action] = []
    if decision.weight is not None:
        if step_first:
            # The step first, then its weight: an operator that dies in between finds the new step
            # in status and writes its weight, rather than the previous step's back.
            actions.append(WriteStatus(status, may_wait=False))
        actions.append(WriteRoute(decision.weight, decision.mirror_percent, warned(before)))
    reason = status.rollback_reason
    if rolls_back(decision) and reason is not None and reason.metric is not None:
        actions.append(CollectEvidence(reason))
    if decision.events:
        actions.append(PostEvents(events_to_post(decision.events)))
    actions.append(WriteStatus(status, may_wait=True))
    return actions


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


def after_write(
    decision: Decision, written: WriteResult | None, evidence: BreachEvidence | None, now: datetime
) -> Decision:
    """The decision once its route write returned `written` (None: not made) and the provider told a
    breach's `evidence`: what is live goes to status, a write that did not take is a Warning and a
    retry; the actions after them carry the status and Events so settled."""
    route = next((action for action in decision.actions if isinstance(action, WriteRoute)), None)
    settled = decision
    if route is not None and written is not None:
        if decision.deleting:
            return after_returning(decision, route, written)
        generation = decision.status.observed_generation or 0
        settled = settle(decision, written, now, generation, warned=route.warned)
    if evidence is not None:
        settled = with_evidence(settled, evidence.traces, evidence.pods)
    return dataclasses.replace(settled, actions=tuple(_restated(a, settled) for a in decision.actions))


def _restated(action: Action, decision: Decision) -> Action:
    """An action that carries the status or the Events, with the settled ones."""
    match action:
        case PostEvents():
            return PostEvents(events_to_post(decision.events))
        case WriteStatus(may_wait=may_wait):
            return WriteStatus(decision.status, may_wait)
        case Notify():
            return dataclasses.replace(action, status=decision.status)
    return action


def scale_down_event(deployment: str, error: str | None) -> Event:
    """What scaling the incumbent down came to: tried once; a failure (e.g. the chart did not grant
    deployments/scale) is a Warning, and the rollout stays Succeeded."""
    if error is not None:
        message = f"could not scale the incumbent Deployment {deployment} to 0: {error}"
        return Event(Reason.SCALE_DOWN_FAILED, message)
    message = f"the watch window passed: incumbent Deployment {deployment} scaled to 0 replicas"
    return Event(Reason.SCALED_DOWN, message)
