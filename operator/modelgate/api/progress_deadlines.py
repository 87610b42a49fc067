"""ModelRollout.spec.progressDeadlines: how long a rollout may wait for its candidate, or for a
conclusive verdict, and what it does then."""

from datetime import timedelta
from typing import Literal

from pydantic import Field

from modelgate.api.duration import parse_duration
from modelgate.api.fields import PositiveDuration
from modelgate.api.specmodel import SpecModel

DeadlineAction = Literal["pause", "rollback", "fail", "wait"]


class Deadline(SpecModel):
    after: PositiveDuration = Field(description="How long the rollout may stay so, as a Go-style duration.")
    action: DeadlineAction = Field(
        description="Then: pause (wait for `modelgate resume` or `promote`), rollback, fail (Failed, "
        "the candidate's weight 0), or wait (nothing: the deadline is off)."
    )

    @property
    def after_timedelta(self) -> timedelta:
        return parse_duration(self.after)


class ProgressDeadlines(SpecModel):
    """So that a rollout that cannot make progress does not hold two model fleets forever."""

    pending: Deadline | None = Field(
        None,
        description="The candidate has not become Available this long after the rollout started, or "
        "(with spec.capacity.enforce) a step has waited this long for the candidate's Ready replicas. "
        "Unset: after 10m, fail (reason ProgressDeadlineExceeded; the incumbent keeps or takes back all "
        "traffic), as Argo Rollouts' progressDeadlineSeconds; `action: wait` turns it off.",
    )
    inconclusive: Deadline | None = Field(
        None,
        description="The current step's analysis has been Inconclusive (too little data, or a series "
        "nobody exports) this long, counted from its first Inconclusive verdict in the step. Unset: "
        "after 10m, pause (in a step; the watch window has none); `action: wait` turns it off.",
    )


# What an unset spec.progressDeadlines.pending means: a candidate that never becomes Available (or
# never gets the replicas a step waits for) ends the rollout, with traffic on the incumbent, rather
# than hold it Pending forever; 600 s is Argo Rollouts' default progressDeadlineSeconds.
DEFAULT_PENDING_DEADLINE = Deadline(after="10m", action="fail")

# What an unset spec.progressDeadlines.inconclusive means in a step: an Inconclusive step that no
# traffic or no exporter will ever settle stops at its weight and says why, rather than hold it forever.
DEFAULT_INCONCLUSIVE_DEADLINE = Deadline(after="10m", action="pause")
