"""Which Events a tick posts: every Warning on its own, and the tick's routine progress (a step
completed, the next one's weight, the rollout's start or end) as one Event, since each Event is a
request to the API server and a step transition alone names two to four of them.

The tick's decision keeps every transition (the operator logs each one); only what is posted is
combined, so no information is lost: the combined Event's message is all of theirs, in order.
"""

from __future__ import annotations

from modelgate.core.model import Event
from modelgate.core.reasons import EventType, Reason

# A combined Event is named after the first of these its parts have: the rollout's end, what started
# the tick's changes (a new rollout, a command), the rollout's start, where the new step stands, and
# last a step's completion.
_HEADLINES = (
    Reason.ROLLOUT_SUCCEEDED,
    Reason.NEW_ROLLOUT,
    Reason.SPEC_CHANGED,
    Reason.RETRY,
    Reason.PROMOTED,
    Reason.RESUMED,
    Reason.ROLLOUT_STARTED,
    Reason.PAUSED,
    Reason.WEIGHT_SET,
    Reason.MIRROR_SET,
    Reason.MIRROR_REMOVED,
    Reason.STEP_COMPLETED,
)


def events_to_post(events: tuple[Event, ...]) -> tuple[Event, ...]:
    """The tick's Normal Events as one, where the first of them was; the Warnings as they are."""
    routine = [event for event in events if event.type is EventType.NORMAL]
    if len(routine) < 2:
        return events
    reasons = {event.reason for event in routine}
    headline = next((reason for reason in _HEADLINES if reason in reasons), routine[0].reason)
    combined = Event(headline, "; ".join(event.message for event in routine))
    first = events.index(routine[0])
    return tuple(
        combined if index == first else event
        for index, event in enumerate(events)
        if index == first or event.type is EventType.WARNING
    )
