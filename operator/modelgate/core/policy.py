"""The rollout's policy, top to bottom: the rules of a phase in the order the engine evaluates them.
Each rule reads the tick (spec, status, observations, now) and returns an intent
(core/intents.py); the first that is not None decides the tick. A rule may record what it observed
(a condition, a message, an analysis run) and then return None: the next rule reads it."""

from __future__ import annotations

from collections.abc import Callable

from modelgate.core.analysis_run import analysis_verdict, errors_hold
from modelgate.core.capacity import capacity_wait
from modelgate.core.conflicts import conflict_hold
from modelgate.core.deadlines import deadline_hold, inconclusive_deadline, pending_deadline
from modelgate.core.intents import Advance, Hold, Intent
from modelgate.core.query_check import queries_hold
from modelgate.core.tick import Tick
from modelgate.core.watch_window import window_verdict

Rule = Callable[[Tick], Intent]


def no_traffic_yet(tick: Tick) -> Intent:
    """Records: a Pending candidate gets weight 0, and whether it is Available."""
    tick.set_weight(0)
    tick.note_candidate_availability()
    return None


def candidate_wait(tick: Tick) -> Intent:
    """Waits for the candidate to be Available, until the pending deadline acts."""
    if tick.observed.candidate_available:
        return None
    message = f"waiting for the candidate: {tick.observed.candidate_message}"
    return pending_deadline(tick) or Hold(message)


def reassert_weight(tick: Tick) -> Intent:
    """Records: the weight this step wrote is asked again (should it have drifted), and whether the
    candidate is Available."""
    tick.set_weight(tick.status.current_weight)
    tick.note_candidate_availability()
    return None


def advance(tick: Tick) -> Intent:
    return Advance()


PENDING: tuple[Rule, ...] = (
    no_traffic_yet,
    conflict_hold,
    deadline_hold,
    candidate_wait,
    queries_hold,  # no weight before every query of the analysis answers
    advance,  # to the gate, or to step 0
)

STEPPING: tuple[Rule, ...] = (  # Progressing or Paused, in a step or in the watch window
    analysis_verdict,  # a breach rolls back before anything else
    conflict_hold,
    reassert_weight,
    errors_hold,
    deadline_hold,
    inconclusive_deadline,
    queries_hold,
    window_verdict,
    capacity_wait,
    advance,  # through the completed steps
)


def first_intent(tick: Tick, rules: tuple[Rule, ...]) -> Intent:
    for rule in rules:
        if (intent := rule(tick)) is not None:
            return intent
    return None
