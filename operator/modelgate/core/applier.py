"""A Decision's actions applied in memory, in order, with the semantics the reconciler gives them on
the cluster: the route's weights and mirror, the status, the Events, the finalizer, the incumbent's
replicas, the gate's Jobs, the command annotation and the notifications queued. A route write
answers as the in-memory router says (it takes, is not live yet, fails, or finds no route), and what
it returned is folded into the actions after it (core/actions.py's after_write), as the reconciler
does. The replay, `plan` and the engine's unit tests run each tick's actions through it."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from modelgate.api import ModelRolloutStatus, RolloutRef
from modelgate.api.gate_status import GateStatus
from modelgate.core.actions import after_evidence, after_write, scale_down_event
from modelgate.core.evidence import BreachEvidence
from modelgate.core.model import (
    ClearCommand,
    CollectEvidence,
    Decision,
    DeleteGateJobs,
    Event,
    LiveRoute,
    Notify,
    PostEvents,
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
            case ScaleDownIncumbent(deployment=deployment):
                world = replace(world, incumbent_replicas=0)
                events.append(scale_down_event(deployment, None))
            case ClearCommand(command_id=command_id):
                world = replace(world, command=None if world.command == command_id else world.command)
            case Notify() as notify:
                world = replace(world, notifications=(*world.notifications, notify))
        index += 1
    return Applied(world, decision, tuple(writes), tuple(events))


def _write(world: World, route: WriteRoute) -> tuple[World, WriteResult]:
    """The route write as the in-memory router answers it."""
    live, router = world.route, world.router
    if isinstance(live, RouteProblem):
        return world, live
    if router.refusal is not None:
        return world, router.refusal
    if not router.applies:
        return world, live
    owners = live.owners if router.owner is None else frozenset({router.owner})
    written = LiveRoute(100 - route.weight, route.weight, mirror_percent=route.mirror_percent, owners=owners)
    return replace(world, route=written), written
