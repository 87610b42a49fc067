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
from modelgate.core.intents import Hold, Intent
from modelgate.core.reasons import ConditionType, Reason
from modelgate.core.tick import Tick
from modelgate.core.wording import how_many


def needed_replicas(incumbent_ready: int, weight: int) -> int:
    """Candidate Ready replicas that `weight` percent of the traffic needs: ceil(incumbent x weight / 100)."""
    return -(-incumbent_ready * weight // 100)


def enforced(tick: Tick) -> bool:
    return tick.spec.capacity is not None and tick.spec.capacity.enforce


def step_waits(tick: Tick) -> bool:
    """The current setWeight step has not raised its weight yet (it waits for capacity)."""
    if not enforced(tick) or tick.status.current_step_index >= len(tick.spec.steps):
        return False
    wanted = tick.step.set_weight
    return wanted is not None and wanted != tick.status.current_weight


def holds_weight(tick: Tick, weight: int) -> bool:
    """Whether raising the candidate's weight to `weight` waits for its Ready replicas. Says so while
    it does (message, condition, pendingSince, an Event when the wait begins) and when it ends."""
    if not enforced(tick) or weight <= tick.status.current_weight:
        return False
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
            tick.condition(ConditionType.CANDIDATE_CAPACITY, True, Reason.CAPACITY_AVAILABLE, enough)
            if waiting:
                tick.event(Reason.CAPACITY_AVAILABLE, f"raising the candidate's weight: {enough}")
                tick.update(pending_since=None, capacity_wait_since=None)
            return False
        shortfall = enough
    message = f"holding the candidate's weight at {tick.status.current_weight}: {shortfall}"
    if not waiting:
        tick.event(Reason.INSUFFICIENT_CAPACITY, message)
    tick.condition(ConditionType.CANDIDATE_CAPACITY, False, Reason.INSUFFICIENT_CAPACITY, message)
    tick.update(
        phase=Phase.PROGRESSING,
        pending_since=tick.status.pending_since or tick.now,
        capacity_wait_since=tick.status.capacity_wait_since or tick.now,
    )
    tick.note(message)
    return True


def capacity_wait(tick: Tick) -> Intent:
    """A waiting step raises its weight once the capacity is there (and the step goes on); while it
    still waits it holds, unless its progress deadline acts."""
    if not step_waits(tick):
        _no_wait(tick)
        return None
    weight = tick.step.set_weight
    assert weight is not None
    if holds_weight(tick, weight):
        return pending_deadline(tick) or Hold()
    index = tick.status.current_step_index
    # The step's clock (its analysis window, a deadline) starts when its weight does.
    tick.set_weight(weight)
    message = f"step {index}: candidate weight {weight}"
    tick.update(step_started_at=tick.now, inconclusive_since=None, message=message)
    tick.event(Reason.WEIGHT_SET, f"step {index}: candidate weight {weight}%")
    return None


def _no_wait(tick: Tick) -> None:
    """A wait that ended otherwise (`modelgate promote` past it, a spec edit) is no longer reported."""
    if tick.status.capacity_wait_since is not None:
        tick.condition(ConditionType.CANDIDATE_CAPACITY, True, Reason.CAPACITY_AVAILABLE, "no step waits")
        tick.update(pending_since=None, capacity_wait_since=None)
