"""Every effect of a tick as an action in its Decision, in the order it is applied.

The order the reconciler applies them in: the finalizer first when the rollout needs one (nothing
is written before it); a rollback's weight before anything else, any other weight after the status
that names its step; a breach's evidence; the Events; the status; the ending it reached (counted
and logged); the gate's Jobs; the incumbent scaled down; the command cleared; the
finalizer removed when no longer needed. What a route write returned and what a breach's evidence
says are folded into the actions after them: `after_write`, `after_evidence`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase, RolloutRef, RouteState, WorkloadRef
from modelgate.api.gate_status import GateStatus
from modelgate.core import reasons
from modelgate.core.model import (
    Action,
    ChangeGenerated,
    ClearCommand,
    CollectEvidence,
    Decision,
    DeleteGateJobs,
    Event,
    LiveRoute,
    Notify,
    Observations,
    Outcome,
    PostEvents,
    RecordEnding,
    RemoveFinalizer,
    RouteProblem,
    ScaleDownIncumbent,
    SetFinalizer,
    StartGateChecks,
    WriteFailed,
    WriteResult,
    WriteRoute,
    WriteStatus,
)
from modelgate.core.notifying import BreachEvidence, notify_actions, with_evidence
from modelgate.core.reasons import Reason
from modelgate.core.results import GeneratedChange, GeneratedObjects

# -- actions ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TickEffects:
    """What a tick asks for besides its status: the candidate weight to write (None: leave the route
    alone; the mirror written with it is the status's), its Events, the end it reached, and whether
    the watch window passed with the incumbent to be scaled down."""

    weight: int | None
    events: tuple[Event, ...]
    ending: Outcome | None
    scale_down_incumbent: bool
    # A one-edit rollout's (core/endings.py): its changes to what is generated, first; the finalizer
    # kept while something generated is left for a deletion to remove.
    generated: tuple[ChangeGenerated | ScaleDownIncumbent, ...] = ()
    keeps_generated: bool = False


def incumbent_scale_downs(incumbent: WorkloadRef) -> list[Action]:
    """The incumbent's workload, or every workload of its group (and the incumbent's own workload,
    when that is not one of them; a pool has no replicas)."""
    members = incumbent.members or ()
    scaled: list[Action] = [ScaleDownIncumbent(member.name, member.kind, member) for member in members]
    listed = {(member.kind, member.name) for member in members}
    if incumbent.inference_pool is None and (incumbent.kind, incumbent.name) not in listed:
        scaled.insert(0, ScaleDownIncumbent(incumbent.name, incumbent.kind))
    return scaled


def tick_actions(
    spec: ModelRolloutSpec,
    before: ModelRolloutStatus,
    observed: Observations,
    status: ModelRolloutStatus,
    effects: TickEffects,
) -> tuple[Action, ...]:
    """The actions of a tick that started from `before` and came to `status` asking for `effects`."""
    wanted = finalizer_wanted(spec, status) or effects.keeps_generated
    actions: list[Action] = [SetFinalizer()] if wanted and not observed.has_finalizer else []
    actions += effects.generated
    route = None
    if effects.weight is not None:
        route = WriteRoute(effects.weight, status.current_mirror_percent, warned(before))
    rolled_back = effects.ending is not None and effects.ending.phase is Phase.ROLLED_BACK
    actions += route_actions(status, route, effects.events, step_first=not rolled_back, ending=effects.ending)
    actions += _gate_jobs(before, status)
    if effects.scale_down_incumbent:
        actions += incumbent_scale_downs(spec.incumbent)
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
    ending: Outcome | None = None,
) -> list[Action]:
    """The route write, the evidence of a breach this tick rolled back on, the Events, the status and
    the `ending` reached. `step_first`: the status that names the step is written before its weight
    (a rollback's 0, or that of a spec that cannot be used, goes first)."""
    actions: list[Action] = []
    if route is not None:
        if step_first:
            # The step first, then its weight: an operator that dies in between finds the new step
            # in status and writes its weight, rather than the previous step's back.
            actions.append(WriteStatus(status, may_wait=False))
        actions.append(route)
    reason = status.rollback_reason
    rolled_back = ending is not None and ending.phase is Phase.ROLLED_BACK
    if rolled_back and reason is not None and reason.metric is not None:
        actions.append(CollectEvidence(reason))
    if events:
        actions.append(PostEvents(events))
    actions.append(WriteStatus(status, may_wait=True))
    if ending is not None:
        actions.append(RecordEnding(ending))
    return actions


def returned_actions(
    status: ModelRolloutStatus, route: WriteRoute | None, events: tuple[Event, ...], ending: Outcome | None
) -> tuple[Action, ...]:
    """The actions of a rollout failed without the engine (core/endings.py):
    its candidate's traffic returned first, its Events, its status, the ending if it is one."""
    return tuple(route_actions(status, route, events, step_first=False, ending=ending))


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
    and a retry (a deletion's: its finalizer stays, core/actions.py)."""
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


def scale_down_event(scaled: ScaleDownIncumbent, error: str | None) -> Event:
    """What scaling the incumbent down came to: tried once; a failure (e.g. the chart did not grant
    <kind>/scale) is a Warning, and the rollout stays Succeeded."""
    incumbent = f"incumbent {scaled.kind} {scaled.name}"
    if error is not None:
        return Event(Reason.SCALE_DOWN_FAILED, f"could not scale the {incumbent} to 0: {error}")
    message = f"the watch window passed: {incumbent} scaled to 0 replicas"
    return Event(Reason.SCALED_DOWN, message)


# -- writes ----------------------------------------------------------------------------------------
# What a weight write returned, folded into the tick's decision: the weight the route now carries goes to
# status, and a write that did not take (on any of the routes moved together, named) is a Warning (once, until
# it takes) and a retry (core/actions.py's after_write folds it into the actions).


# A weight write that did not take is tried again this soon, not at the next resync.
WRITE_RETRY = timedelta(seconds=1)


def warned(before: ModelRolloutStatus) -> bool:
    """Whether the status says a write did not take already (its Warning is out)."""
    return before.route_state is RouteState.WEIGHT_NOT_APPLIED


@dataclass(frozen=True)
class Settled:
    """What a route write's result changes: the status, a Warning to post (None: none), the wake-up."""

    status: ModelRolloutStatus
    warning: Event | None
    wake_at: datetime | None


def settle(
    status: ModelRolloutStatus,
    route: WriteRoute,
    written: WriteResult,
    now: datetime,
    wake_at: datetime | None,
) -> Settled:
    wanted = route.weight
    copies = _mirror(route.mirror_percent)
    if isinstance(written, LiveRoute):
        status = status.model_copy(
            update={"live_weight": written.candidate_weight, "live_mirror_percent": written.mirror_percent}
        )
        if written.differing is not None:
            problem = f"after writing candidate weight {wanted}{copies}, {written.differing}"
        elif (written.candidate_weight, written.mirror_percent) == (wanted, route.mirror_percent):
            return Settled(status, None, wake_at)
        else:
            carried = f"{written.candidate_weight}{_mirror(written.mirror_percent)}"
            problem = f"the route carries candidate weight {carried} after writing {wanted}{copies}"
    else:  # a RouteProblem or a WriteFailed
        problem = f"writing candidate weight {wanted}{copies} failed: {written.message}"
    message = reasons.clip(f"{problem}; retrying", reasons.CONDITION_MESSAGE)
    generation = status.observed_generation or 0
    status = reasons.with_route_state(status, RouteState.WEIGHT_NOT_APPLIED, message, now, generation)
    warning = None if route.warned else Event(Reason.WEIGHT_NOT_APPLIED, message)
    if wake_at is not None and status.phase is not Phase.FAILED:  # Failed waits for the route to be read
        wake_at = min(wake_at, now + WRITE_RETRY)
    return Settled(status, warning, wake_at)


def as_if_taken(decision: Decision) -> ModelRolloutStatus:
    """The decision's status once the route carries the weight and mirror its WriteRoute writes
    (what `settle` makes of a write that took); the status itself when it writes none."""
    route = next((action for action in decision.actions if isinstance(action, WriteRoute)), None)
    if route is None:
        return decision.status
    taken = {"live_weight": route.weight, "live_mirror_percent": route.mirror_percent}
    return decision.status.model_copy(update=taken)


def _mirror(percent: int) -> str:
    return f" and a {percent}% mirror" if percent else ""


# -- deletion --------------------------------------------------------------------------------------
# Deleting a rollout (spec.rollback.onDelete): with ReturnTraffic the operator keeps a finalizer on the
# rollout, and on deletion sets the candidate's weight to 0 (verified) before removing it.
#
# The finalizer is there only while deleting could leave the candidate traffic it should not keep: onDelete is
# ReturnTraffic and the rollout has not ended with the route final, that is Succeeded (the candidate is the
# new incumbent: deleting the rollout must not take its traffic away) or RolledBack with the candidate's
# weight at 0. Any other rollout has no finalizer, so deleting it never waits on the operator; kopf adds none
# either, since modelgate registers no deletion handler with it.


FINALIZER = "modelgate.io/return-traffic"


def finalizer_wanted(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> bool:
    if spec.rollback.on_delete != "ReturnTraffic":
        return False
    rolled_back = (
        status.phase is Phase.ROLLED_BACK and status.rolling_back is None and status.live_weight == 0
    )
    return not (status.phase is Phase.SUCCEEDED or rolled_back)


def weight_on_delete(
    spec: ModelRolloutSpec | None,
    status: ModelRolloutStatus,
    route: LiveRoute | RouteProblem | None,
    owner: RolloutRef | None = None,
    generated: bool = False,
) -> int | None:
    """The candidate weight to write before the finalizer goes: 0, or None when there is nothing to
    return (onDelete is no longer ReturnTraffic, the rollout Succeeded, the route cannot be used, is
    another rollout's (core/holds.py), or already gives the candidate nothing, not even copies).
    `generated`: the candidate is one a one-edit rollout generated and is about to remove, so its
    weight returns whatever onDelete says or the rollout's phase was."""
    if spec is None:
        return None
    if not generated and (spec.rollback.on_delete != "ReturnTraffic" or status.phase is Phase.SUCCEEDED):
        return None
    if not isinstance(route, LiveRoute) or (route.candidate_weight, route.mirror_percent) == (0, 0):
        return None
    return None if route.owners - {owner} else 0


def decide_deletion(
    spec: ModelRolloutSpec | None,
    status: ModelRolloutStatus,
    route: LiveRoute | RouteProblem | None,
    has_finalizer: bool,
    owner: RolloutRef | None = None,
    generated: bool = False,
) -> Decision:
    """A rollout being deleted: with onDelete ReturnTraffic (or a generated candidate, `generated`),
    the candidate's weight to 0 (verified, `after_returning`) before the finalizer goes. One without
    our finalizer is not ours to hold."""
    if not has_finalizer:
        return Decision(status)
    weight = weight_on_delete(spec, status, route, owner, generated)
    if weight is None:
        return Decision(status, (RemoveFinalizer(),))
    message = f"deleting: the candidate's weight is {weight}, the incumbent takes all traffic"
    events = (Event(Reason.TRAFFIC_RETURNED, message),)
    return Decision(status, (WriteRoute(weight, 0), PostEvents(events), RemoveFinalizer(once_returned=True)))


def after_returning(decision: Decision, route: WriteRoute, written: WriteResult) -> Decision:
    """The traffic returned: the finalizer goes. Not (yet): a Warning instead of the Events, and the
    finalizer stays."""
    if isinstance(written, LiveRoute) and (written.candidate_weight, written.mirror_percent) == (
        route.weight,
        route.mirror_percent,
    ):
        return decision
    message = f"deleting: the candidate's weight is not {route.weight} yet ({written}); trying again"
    warning = PostEvents((Event(Reason.WEIGHT_NOT_APPLIED, message),))
    kept = tuple(
        warning if isinstance(action, PostEvents) else action
        for action in decision.actions
        if not (isinstance(action, RemoveFinalizer) and action.once_returned)
        and not isinstance(action, ChangeGenerated)  # nothing generated goes while it has traffic
    )
    return dataclasses.replace(decision, actions=kept)


# -- applier ---------------------------------------------------------------------------------------
# A Decision's actions applied in memory, in order, with the semantics the reconciler gives them on the
# cluster: the route's weights and mirror, the status, the Events, the finalizer, the incumbent's replicas,
# the gate's Jobs, the command annotation and the notifications queued. A route write answers as the in-memory
# router says (it takes, is not live yet, fails, or finds no route), and what it returned is folded into the
# actions after it (core/actions.py's after_write), as the reconciler does. The replay, `plan` and the
# engine's unit tests run each tick's actions through it.


@dataclass(frozen=True)
class Router:
    """How the in-memory route answers a write: it takes (`applies`), or returns what the route
    carried still (a router whose writes are not live yet), or fails with `refusal`. A write that
    takes leaves `owner`'s claim on the route."""

    applies: bool = True
    refusal: WriteFailed | None = None
    owner: RolloutRef | None = None


@dataclass(frozen=True)
class World:
    """What a rollout's actions change, in memory. `incumbent_replicas`: None as deployed, 0 once
    scaled down; `gate_jobs`: the gate whose check Jobs run; `command`: the command annotation's id;
    `evidence`: what the metric provider tells of a breach."""

    route: LiveRoute | RouteProblem = field(default_factory=lambda: LiveRoute(100, 0))
    status: ModelRolloutStatus = field(default_factory=ModelRolloutStatus)
    finalizer: bool = False
    incumbent_replicas: int | None = None
    gate_jobs: GateStatus | None = None
    command: str | None = None
    notifications: tuple[Notify, ...] = ()  # queued for delivery, oldest first
    router: Router = field(default_factory=Router)
    evidence: BreachEvidence | None = None
    endings: tuple[Outcome, ...] = ()  # the ends counted, oldest first
    generated: GeneratedObjects | None = None  # a one-edit rollout's (spec.candidatePatch)


@dataclass(frozen=True)
class Applied:
    """One decision applied: the world after it, the decision as what its write returned settled it,
    the route writes made (with what each returned) and the Events, each transition on its own (the
    reconciler logs each; core.events_to_post combines what it posts)."""

    world: World
    decision: Decision
    writes: tuple[tuple[WriteRoute, WriteResult], ...]
    events: tuple[Event, ...]


def apply(world: World, decision: Decision, now: datetime) -> Applied:
    """Applies `decision`'s actions to `world` in order; a route write's result is folded into the
    actions after it before they are applied."""
    writes: list[tuple[WriteRoute, WriteResult]] = []
    events: list[Event] = []
    index = 0
    while index < len(decision.actions):
        match decision.actions[index]:
            case SetFinalizer():
                world = replace(world, finalizer=True)
            case RemoveFinalizer():
                world = replace(world, finalizer=False)
            case WriteRoute() as route:
                world, written = _write(world, route)
                writes.append((route, written))
                decision = after_write(decision, written, now)
            case CollectEvidence():
                if world.evidence is not None:
                    decision = after_evidence(decision, world.evidence)
            case PostEvents(events=posted):
                events += posted
            case WriteStatus(status=status):
                world = replace(world, status=status)
            case StartGateChecks(gate=gate):
                world = replace(world, gate_jobs=gate)
            case DeleteGateJobs():
                world = replace(world, gate_jobs=None)
            case ScaleDownIncumbent() as scaled:
                world = replace(world, incumbent_replicas=0)
                if world.generated is not None:
                    world = replace(world, generated=replace(world.generated, incumbent_scaled_down=True))
                events.append(scale_down_event(scaled, None))
            case ChangeGenerated(change=change):
                assert world.generated is not None, "only a one-edit rollout changes what is generated"
                world = replace(world, generated=_changed(world.generated, change))
            case ClearCommand(command_id=command_id):
                world = replace(world, command=None if world.command == command_id else world.command)
            case Notify() as notify:
                world = replace(world, notifications=(*world.notifications, notify))
            case RecordEnding(outcome=outcome):
                world = replace(world, endings=(*world.endings, outcome))
        index += 1
    return Applied(world, decision, tuple(writes), tuple(events))


def _changed(generated: GeneratedObjects, change: GeneratedChange) -> GeneratedObjects:
    """What a change to the generated objects leaves, as kube/generated_candidates.py makes it."""
    if change is GeneratedChange.CREATE:
        return replace(generated, deployment=True, service=True, backend_refs=True, owned=True)
    if change is GeneratedChange.REMOVE:
        return replace(generated, deployment=False, service=False, backend_refs=False)
    if change is GeneratedChange.PATCH_INCUMBENT:
        return replace(generated, incumbent_patched=True)
    return replace(generated, owned=False)


def _write(world: World, route: WriteRoute) -> tuple[World, WriteResult]:
    """The route write as the in-memory router answers it."""
    live, router = world.route, world.router
    if isinstance(live, RouteProblem):
        return world, live
    if router.refusal is not None:
        return world, router.refusal
    if not router.applies:
        return world, live
    if world.generated is not None and not world.generated.backend_refs and route.weight:
        return world, RouteProblem(Reason.BACKEND_NOT_FOUND, "the generated candidate has no backendRef")
    owners = live.owners if router.owner is None else frozenset({router.owner})
    written = LiveRoute(100 - route.weight, route.weight, mirror_percent=route.mirror_percent, owners=owners)
    return replace(world, route=written), written
