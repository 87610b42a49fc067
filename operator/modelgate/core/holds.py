"""What holds a rollout where it is: a progress deadline, another writer of the route, another
rollout's claim on the route, and a candidate short of the Ready replicas its next weight needs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from modelgate.api import (
    Deadline,
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RollbackReason,
    RolloutRef,
    RouteState,
    Verdict,
)
from modelgate.api.progress_deadlines import DEFAULT_INCONCLUSIVE_DEADLINE, DEFAULT_PENDING_DEADLINE
from modelgate.core.model import (
    BeginPause,
    Effect,
    EndPause,
    Event,
    Fail,
    Hold,
    Intent,
    LiveRoute,
    Noted,
    Observations,
    RaiseWeight,
    RollBack,
    Say,
    SetCondition,
    SetRouteState,
    StepNote,
    fields,
)
from modelgate.core.reasons import ConditionType, Reason, how_many
from modelgate.core.tick import TickView, watching

# -- deadlines -------------------------------------------------------------------------------------
# Progress deadlines: a rollout Pending (candidate never Available) or Inconclusive (too little data) past its
# deadline takes the configured action, instead of holding two model fleets forever, as Flagger's and Argo
# Rollouts' progress deadlines do.


def pending_deadline(tick: TickView) -> Intent:
    """The pending deadline's action once it has passed (a pause that begins holds)."""
    since, what = tick.status.pending_since, "the candidate has not become Available within"
    return _check(tick, PauseReason.PENDING_DEADLINE, pending_limit(tick.spec), since, what)


def candidate_deadline(tick: TickView) -> Intent:
    """While the candidate is not Available: the pending deadline's action once it has passed."""
    return None if tick.observed.candidate_available else pending_deadline(tick)


def pending_limit(spec: ModelRolloutSpec) -> Deadline:
    """The spec's pending deadline; unset, DEFAULT_PENDING_DEADLINE."""
    deadlines = spec.progress_deadlines
    if deadlines is not None and deadlines.pending is not None:
        return deadlines.pending
    return DEFAULT_PENDING_DEADLINE


def inconclusive_deadline(tick: TickView) -> Intent:
    """The inconclusive deadline's action once it has passed (a pause that begins holds)."""
    deadline = inconclusive_limit(tick.spec, tick.status)
    since = tick.status.inconclusive_since
    what = "the analysis has been Inconclusive for"
    without = _without_events(tick.status)
    detail = _inconclusive(tick)
    if without:
        detail += f"; no events on either side in {', '.join(without)}: a ratio margin is never shown"
    intent = _check(tick, PauseReason.INCONCLUSIVE_DEADLINE, deadline, since, what, detail)
    return replace(intent, without_events=without) if isinstance(intent, Hold) else intent


def inconclusive_limit(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> Deadline | None:
    """The spec's inconclusive deadline; unset, DEFAULT_INCONCLUSIVE_DEADLINE in a step (the watch
    window ends at its own time)."""
    deadlines = spec.progress_deadlines
    if deadlines is not None and deadlines.inconclusive is not None:
        return deadlines.inconclusive
    return None if watching(status) else DEFAULT_INCONCLUSIVE_DEADLINE


def _inconclusive(tick: TickView) -> str:
    """The Inconclusive metrics and why, for the deadline's message."""
    why = [f"{m.name}: {m.message}" for m in tick.status.analysis if m.verdict is Verdict.INCONCLUSIVE]
    return f" ({'; '.join(why)})" if why else ""


def _without_events(status: ModelRolloutStatus) -> tuple[str, ...]:
    """The Inconclusive metrics whose counts hold requests but no event on either side: a ratio margin
    is never shown from them (docs/statistics.md), which the pause says as data."""
    return tuple(
        m.name
        for m in status.analysis
        if m.verdict is Verdict.INCONCLUSIVE
        and m.sequential is not None
        and m.sequential.candidate_requests > 0
        and m.sequential.candidate_events == m.sequential.incumbent_events == 0
    )


def _check(
    tick: TickView,
    pause: PauseReason,
    deadline: Deadline | None,
    since: datetime | None,
    what: str,
    detail: str = "",
) -> Intent:
    if deadline is None or deadline.action == "wait" or since is None:
        return None
    return _act(tick, pause, deadline, since, f"{what} {deadline.after}{detail}")


def deadline_paused(tick: TickView) -> bool:
    return tick.paused_by(PauseReason.PENDING_DEADLINE, PauseReason.INCONCLUSIVE_DEADLINE)


def deadline_hold(tick: TickView) -> Intent:
    """Paused at its deadline: held, with the message saying why, until `modelgate resume`."""
    pause = tick.status.pause
    return Hold(pause=pause.reason) if pause is not None and pause.reason.deadline else None


def _act(tick: TickView, pause: PauseReason, deadline: Deadline, since: datetime, what: str) -> Intent:
    if tick.now - since < deadline.after_timedelta or deadline_paused(tick):
        return None
    unset = deadline in (DEFAULT_PENDING_DEADLINE, DEFAULT_INCONCLUSIVE_DEADLINE)
    message = f"{what}; {deadline.action} per spec.progressDeadlines{' (its default)' if unset else ''}"
    if deadline.action == "rollback":
        return RollBack(RollbackReason(time=tick.now, message=message), Reason.PROGRESS_DEADLINE_EXCEEDED)
    exceeded = Event(Reason.PROGRESS_DEADLINE_EXCEEDED, message)
    if deadline.action == "fail":
        return Fail(Reason.PROGRESS_DEADLINE_EXCEEDED, message, exceeded)
    # pause: the weights stay; `modelgate resume` (or `promote`) restarts the clock.
    paused = f"paused: {message}; run `modelgate resume` to continue"
    return Hold(paused, pause, Reason.PROGRESS_DEADLINE_EXCEEDED, message, exceeded)


# -- conflicts -------------------------------------------------------------------------------------
# Another writer of the route's weights (a GitOps sync, a second controller, a person with kubectl): the
# operator writes its weight back once; should the other writer change it again, the operator holds instead of
# fighting. Holding: no weight writes and no step advances (a rollback still writes 0) until
# `modelgate resume`, `promote` or `abort`, so that two writers never flap the route.


def overwritten_by(tick: TickView, route: LiveRoute) -> str | None:
    """The other writer, when the route carries a weight that neither the operator left there (at its
    previous tick) nor wants now, and the route names a writer other than the operator."""
    left = tick.status.live_weight
    if route.other_writer is None or left is None:
        return None
    if route.candidate_weight in (left, tick.status.current_weight):
        return None
    return route.other_writer


def overwrite_noticed(tick: TickView) -> bool:
    """The route was overwritten in this rollout (said once; kept until a command or a new rollout)."""
    state = tick.status.route_state
    return state is not None and state.overwrite_noticed


def route_conflict_held(tick: TickView) -> bool:
    return tick.paused_by(PauseReason.ROUTE_CONFLICT)


def conflict_hold(tick: TickView) -> Intent:
    """The other writer's weight stays; only a rollback writes."""
    return Hold(pause=PauseReason.ROUTE_CONFLICT) if route_conflict_held(tick) else None


def overwrite_noted(tick: TickView, route: LiveRoute, writer: str) -> tuple[Effect, ...]:
    """What another writer's change says: the first is written back once, a second holds the rollout."""
    if route_conflict_held(tick):
        return ()  # already holding, and said so
    what = (
        f"field manager {writer!r} changed the route's candidate weight from {tick.status.live_weight}"
        f" to {route.candidate_weight}"
    )
    if not overwrite_noticed(tick):
        message = (
            f"{what}; writing {tick.status.current_weight} back once (a second change holds the rollout)"
        )
        return Say(Reason.ROUTE_OVERWRITTEN, message), SetRouteState(RouteState.OVERWRITTEN, message)
    message = (
        f"{what} again after the operator wrote its weight back; holding, with no more writes, until"
        " `modelgate resume`: stop the other writer first"
    )
    effects: list[Effect] = [
        Say(Reason.ROUTE_CONFLICT, message),
        SetRouteState(RouteState.CONFLICT, message),
        BeginPause(PauseReason.ROUTE_CONFLICT, message),
    ]
    phase = tick.status.phase
    if phase is Phase.PROGRESSING:
        phase = Phase.PAUSED
        effects.append(fields(phase=phase))
    if phase in (Phase.PENDING, Phase.PAUSED):
        effects.append(fields(message=f"paused: {message}"))
    return tuple(effects)


def releasing(tick: TickView, by: str) -> tuple[Effect, ...]:
    """A command ends a hold and forgets the overwrite: the weight is written again this tick."""
    written_again = (SetRouteState(RouteState.FOUND, f"writing weights again after {by}"),)
    return (*(written_again if overwrite_noticed(tick) else ()), EndPause((PauseReason.ROUTE_CONFLICT,)))


# -- route_claims ----------------------------------------------------------------------------------
# One owner per route rule (routers/claims.py records it on the route). A rollout writes a rule only when it
# may claim it: nobody else claims it, or the rollout that did has ended and the route serves this rollout's
# incumbent. Otherwise it holds, writing nothing, not even a rollback's 0, until that changes by itself; an
# ended rollout whose rule a newer one took over writes it no more.


@dataclass(frozen=True)
class ClaimHold:
    """Why this rollout may not write the rule, as the route state, Event and message to show."""

    state: RouteState
    event: Reason
    message: str
    owner: RolloutRef | None


def claim_hold(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, observed: Observations, route: LiveRoute
) -> ClaimHold | None:
    """None when the rollout may write the rule (and so claim it)."""
    claim = observed.route_claim
    if claim is None:
        # Unclaimed (an operator before claims, a new route): the rollout writes what it steers, or
        # takes a route that serves its incumbent at least in part.
        ours = route.candidate_weight == status.current_weight or observed.rollout_ref in route.owners
        return None if ours or route.incumbent_weight > 0 else _not_served(spec, route, None)
    owner = claim.owner
    if status.ended:
        message = f"{owner} took the route rule over; this rollout has ended and writes it no more"
        return ClaimHold(RouteState.HANDED_OVER, Reason.ROUTE_HANDED_OVER, message, owner)
    if not claim.owner_ended:
        message = (
            f"{owner} owns the route rule this rollout names; nothing is written until it ends (Succeeded,"
            " RolledBack or Failed) or is deleted"
        )
        return ClaimHold(RouteState.CLAIMED, Reason.ROUTE_CONFLICT, message, owner)
    if route.candidate_weight == 0 and route.incumbent_weight > 0:
        return None  # the ended owner left the route on this rollout's incumbent: taken over
    return _not_served(spec, route, owner)


def _not_served(spec: ModelRolloutSpec, route: LiveRoute, owner: RolloutRef | None) -> ClaimHold:
    ended = "" if owner is None else f" ({owner}, which claimed it, has ended)"
    message = (
        f"the route sends {route.candidate_weight}% to {spec.candidate.name} (spec.candidate) and"
        f" {route.incumbent_weight}% to {spec.incumbent.name} (spec.incumbent){ended}; this rollout"
        " takes the rule only while the route serves spec.incumbent: nothing is written until it does,"
        " or until spec.incumbent names the backend the route serves"
    )
    return ClaimHold(RouteState.INCUMBENT_NOT_SERVED, Reason.INCUMBENT_NOT_SERVED, message, owner)


def claim_noted(tick: TickView, held: ClaimHold) -> tuple[Effect, ...]:
    """What a claim hold records (nothing is written this tick): said once (an Event), kept in
    status, and a pause while the rollout is active."""
    said = tick.before.route_state is not held.state or tick.before.route_owner != held.owner
    noted: list[Effect] = [Say(held.event, held.message)] if said else []
    noted += [SetRouteState(held.state, held.message), fields(route_owner=held.owner)]
    if not tick.status.ended:
        noted += [
            BeginPause(PauseReason.ROUTE_CLAIMED, held.message),
            fields(message=f"held: {held.message}"),
        ]
    return tuple(noted)


CLAIM_RELEASED: tuple[Effect, ...] = (EndPause((PauseReason.ROUTE_CLAIMED,)), fields(route_owner=None))
"""The rule may be written: a claim hold ends."""


# -- capacity --------------------------------------------------------------------------------------
# Capacity before weight (spec.capacity.enforce): a setWeight step raises the candidate's weight to W only
# once the candidate has ceil(incumbent Ready replicas x W / 100) Ready replicas, the share of the incumbent's
# fleet that W% of the traffic needs at the incumbent's load per replica.
#
# Rounded up, because a fraction of a replica still has to exist: 30% of 5 incumbent replicas is 1.5, and one
# candidate replica would carry 1.5 replicas' load. An incumbent with no Ready replica asks for none (there is
# no load per replica to compare with).
#
# While a step waits, the previous weight stays (the rollout is Progressing, analysis goes on), the
# CandidateCapacity condition and the message give the numbers, and the wait counts against
# spec.progressDeadlines.pending from when it began (status.pendingSince), as a candidate that never becomes
# Available does. Lowering a weight never waits; `modelgate promote` skips a waiting step, and
# `promote --full` gives the candidate everything at once, as they do for any step.


def needed_replicas(incumbent_ready: int, weight: int) -> int:
    """Candidate Ready replicas that `weight` percent of the traffic needs: ceil(incumbent x weight / 100)."""
    return -(-incumbent_ready * weight // 100)


def enforced(tick: TickView) -> bool:
    return tick.spec.capacity is not None and tick.spec.capacity.enforce


def step_waits(tick: TickView) -> bool:
    """The current setWeight step has not raised its weight yet (it waits for capacity)."""
    if not enforced(tick) or tick.status.current_step_index >= len(tick.spec.steps):
        return False
    wanted = tick.step.set_weight
    return wanted is not None and wanted != tick.status.current_weight


def short(tick: TickView, weight: int) -> bool:
    """Whether raising the candidate's weight to `weight` waits for its Ready replicas."""
    if not enforced(tick) or weight <= tick.status.current_weight:
        return False
    ready = tick.observed.ready_replicas
    return ready is None or ready.candidate < needed_replicas(ready.incumbent, weight)


def weight_check(tick: TickView, weight: int) -> tuple[Effect, ...]:
    """What the capacity for `weight` says while the weight waits (message, condition, pendingSince,
    an Event when the wait begins) and when the wait ends."""
    if not enforced(tick) or weight <= tick.status.current_weight:
        return ()
    ready = tick.observed.ready_replicas
    waiting = tick.status.capacity_wait_since is not None
    if ready is None:
        shortfall = "the Ready replicas of the candidate and the incumbent could not be read"
    else:
        needed = needed_replicas(ready.incumbent, weight)
        enough = (
            f"{weight}% needs {how_many(needed, 'Ready candidate replica')} (ceil({ready.incumbent} Ready "
            f"incumbent replicas x {weight} / 100)); the candidate has {ready.candidate}"
        )
        if ready.candidate >= needed:
            available = SetCondition(
                ConditionType.CANDIDATE_CAPACITY, True, Reason.CAPACITY_AVAILABLE, enough
            )
            if not waiting:
                return (available,)
            said = Say(Reason.CAPACITY_AVAILABLE, f"raising the candidate's weight: {enough}")
            return available, said, fields(pending_since=None, capacity_wait_since=None)
        shortfall = enough
    message = f"holding the candidate's weight at {tick.status.current_weight}: {shortfall}"
    began = () if waiting else (Say(Reason.INSUFFICIENT_CAPACITY, message),)
    return (
        *began,
        SetCondition(ConditionType.CANDIDATE_CAPACITY, False, Reason.INSUFFICIENT_CAPACITY, message),
        fields(
            phase=Phase.PROGRESSING,
            pending_since=tick.status.pending_since or tick.now,
            capacity_wait_since=tick.status.capacity_wait_since or tick.now,
        ),
        StepNote(message),
    )


def capacity_note(tick: TickView) -> Noted | None:
    """Records how the capacity of a waiting step stands; a wait that ended otherwise (`modelgate
    promote` past it, a spec edit) is no longer reported."""
    if step_waits(tick):
        weight = tick.step.set_weight
        assert weight is not None
        return Noted(weight_check(tick, weight))
    if tick.status.capacity_wait_since is None:
        return None
    no_wait = SetCondition(ConditionType.CANDIDATE_CAPACITY, True, Reason.CAPACITY_AVAILABLE, "no step waits")
    return Noted((no_wait, fields(pending_since=None, capacity_wait_since=None)))


def capacity_deadline(tick: TickView) -> Intent:
    """A step waiting for capacity counts against the pending deadline."""
    weight = _waiting_weight(tick)
    return pending_deadline(tick) if weight is not None and short(tick, weight) else None


def capacity_wait(tick: TickView) -> Intent:
    """A waiting step raises its weight once the capacity is there (and the step goes on); until
    then it holds."""
    weight = _waiting_weight(tick)
    if weight is None:
        return None
    return Hold() if short(tick, weight) else RaiseWeight(tick.status.current_step_index, weight)


def _waiting_weight(tick: TickView) -> int | None:
    """The weight the current step waits to raise, if it waits."""
    return tick.step.set_weight if step_waits(tick) else None
