"""Capacity before weight (spec.capacity.enforce): a setWeight step raises the candidate's weight to
W only once the candidate has ceil(incumbent Ready replicas x W / 100) Ready replicas, the share of
the incumbent's fleet that W% of the traffic needs at the incumbent's load per replica.

Rounded up, because a fraction of a replica still has to exist: 30% of 5 incumbent replicas is 1.5,
and one candidate replica would carry 1.5 replicas' load. An incumbent with no Ready replica asks
for none (there is no load per replica to compare with).

While a step waits, the previous weight stays (the rollout is Progressing, analysis goes on), the
CandidateCapacity condition and the message give the numbers, and the wait counts against
spec.progressDeadlines.pending from when it began (status.pendingSince), as a candidate that never
becomes Available does. Lowering a weight never waits; `modelgate promote` skips a waiting step, and
`promote --full` gives the candidate everything at once, as they do for any step.
"""

from __future__ import annotations

from modelgate.api import Phase
from modelgate.core.deadlines import pending_deadline
from modelgate.core.intents import (
    Effect,
    Hold,
    Intent,
    Noted,
    RaiseWeight,
    Say,
    SetCondition,
    StepNote,
    fields,
)
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.tick import TickView
from modelgate.core.wording import how_many


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
