"""Where a rollout is, read from its spec and status alone: pure predicates the tick and the feature
rules share (the bottom of core's layers, so that any of them may ask)."""

from __future__ import annotations

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase

STEPPING_PHASES = (Phase.PROGRESSING, Phase.PAUSED)


def watching(status: ModelRolloutStatus) -> bool:
    """In the watch window (spec.watch): every step done, the analysis goes on."""
    return status.watch_ends_at is not None and status.phase in STEPPING_PHASES


def mirror_wanted(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> int:
    """The percentage of requests to copy to the candidate: the current step's while an active rollout
    is at a mirror step, else 0 (any other step, Pending, and every end: a rollback mirrors nothing)."""
    if status.phase not in STEPPING_PHASES or status.current_step_index >= len(spec.steps):
        return 0
    mirror = spec.steps[status.current_step_index].mirror
    return 0 if mirror is None else mirror.percent


def candidate_served(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> bool:
    """The candidate gets requests, its own share or copies, so its metrics have something to judge."""
    return status.current_weight > 0 or mirror_wanted(spec, status) > 0
