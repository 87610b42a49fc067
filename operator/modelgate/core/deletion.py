"""Deleting a rollout (spec.rollback.onDelete): with ReturnTraffic the operator keeps a finalizer on
the rollout, and on deletion sets the candidate's weight to 0 (verified) before removing it.

The finalizer is there only while deleting could leave the candidate traffic it should not keep:
onDelete is ReturnTraffic and the rollout has not ended with the route final, that is Succeeded (the
candidate is the new incumbent: deleting the rollout must not take its traffic away) or RolledBack
with the candidate's weight at 0. Any other rollout has no finalizer, so deleting it never waits on
the operator; kopf adds none either, since modelgate registers no deletion handler with it.
"""

from __future__ import annotations

import dataclasses

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase, RolloutRef
from modelgate.core.model import (
    Decision,
    Event,
    LiveRoute,
    PostEvents,
    RemoveFinalizer,
    RouteProblem,
    WriteResult,
    WriteRoute,
)
from modelgate.core.reasons import Reason

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
) -> int | None:
    """The candidate weight to write before the finalizer goes: 0, or None when there is nothing to
    return (onDelete is no longer ReturnTraffic, the rollout Succeeded, the route cannot be used, is
    another rollout's (core/route_claims.py), or already gives the candidate nothing, not even copies)."""
    if spec is None or spec.rollback.on_delete != "ReturnTraffic" or status.phase is Phase.SUCCEEDED:
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
) -> Decision:
    """A rollout being deleted: with onDelete ReturnTraffic, the candidate's weight to 0 (verified,
    `after_returning`) before the finalizer goes. One without our finalizer is not ours to hold."""
    if not has_finalizer:
        return Decision(status)
    weight = weight_on_delete(spec, status, route, owner)
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
    )
    return dataclasses.replace(decision, actions=kept)
