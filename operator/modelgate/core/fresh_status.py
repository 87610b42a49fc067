"""The status a rollout starts from (a new candidate, a spec edit, `modelgate retry`): the model's
defaults, but for what is the object's rather than the rollout's, listed in KEPT. A field added to the
status is so reset by a new rollout without anyone having to remember it."""

from __future__ import annotations

from datetime import datetime

from modelgate.api import EarlierRollout, ModelRolloutStatus, Phase
from modelgate.api.status import MAX_EARLIER_ROLLOUTS
from modelgate.core import limits

KEPT = frozenset(
    {
        "earlier_rollouts",  # the history, with the rollout being replaced added
        "last_command",  # a command's id, so that one handled before is never applied again
        "analysis_check",  # whether the queries answer: of the analysis, not of the rollout
        "current_mirror_percent",  # what the route was asked to copy: the tick removes it, saying so
        "observed_generation",  # the spec the status was computed from: the tick sets it
        "notifications",  # transitions not yet delivered, and the count that keeps their keys unique
    }
)


def fresh_status(
    status: ModelRolloutStatus, candidate: str, now: datetime, message: str
) -> ModelRolloutStatus:
    kept = {name: getattr(status, name) for name in KEPT}
    started = ModelRolloutStatus(
        phase=Phase.PENDING,
        message=limits.clip(message, limits.STATUS_MESSAGE),
        rollout_candidate=candidate,
        rollout_started_at=now,
        pending_since=now,
    )
    return started.model_copy(update=kept | {"earlier_rollouts": _earlier_rollouts(status)})


def _earlier_rollouts(status: ModelRolloutStatus) -> tuple[EarlierRollout, ...]:
    """The kept history with the rollout being replaced, if there was one."""
    kept = status.earlier_rollouts
    if status.rollout_candidate is None:
        return kept
    ended = EarlierRollout(
        candidate=status.rollout_candidate, started_at=status.rollout_started_at, phase=status.phase
    )
    return (*kept, ended)[-MAX_EARLIER_ROLLOUTS:]
