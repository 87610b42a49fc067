"""A one-edit rollout (spec.candidatePatch) through the engine and the in-memory applier: the
candidate is generated before any weight is written, promoted, and then either folded into the
incumbent (one serving workload left, nothing generated) or kept with the incumbent retired; a
rolled-back or deleted one leaves nothing generated and the incumbent all the traffic."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

from modelgate.api import ModelRolloutSpec, Phase, RolloutRef, parse_spec
from modelgate.core import CommandAction, LiveRoute, Observations, Router, World, WriteFailed, apply, decide
from modelgate.core.endings import decide_generated_deletion, scales_down_incumbent
from modelgate.core.model import ChangeGenerated, ScaleDownIncumbent, WriteRoute
from modelgate.core.results import GeneratedChange, GeneratedObjects
from modelgate.core.stepping import FINISHED_RESYNC
from tests.unit.engine_support import T0, command, live

NOTHING = GeneratedObjects(deployment=False, service=False, backend_refs=False)


def one_edit_spec(after_promotion: str = "PromoteIntoIncumbent", **rollback: Any) -> ModelRolloutSpec:
    return parse_spec(
        {
            "incumbent": {"deployment": "chat-v1"},
            "candidatePatch": {"image": "vllm:2", "afterPromotion": after_promotion},
            "trafficRouting": {"gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1"}},
            "steps": [{"setWeight": 50}, {"setWeight": 100}],
            "rollback": rollback or {"onDelete": "ReturnTraffic"},
        }
    )


def observed(world: World, **extra: Any) -> Observations:
    generated = world.generated
    assert generated is not None
    return Observations(
        generation=1,
        candidate_available=generated.deployment,
        candidate_message="1/1 replicas available" if generated.deployment else "not found",
        route=world.route,
        has_finalizer=world.finalizer,
        generated=generated,
        **extra,
    )


def run(spec: ModelRolloutSpec, world: World, ticks: int, **extra: Any) -> tuple[World, list[Any]]:
    """`ticks` ticks a minute apart; the world after them and every action applied, in order."""
    world, actions, _ = run_until(spec, world, ticks, **extra)
    return world, actions


def run_until(
    spec: ModelRolloutSpec, world: World, ticks: int, **extra: Any
) -> tuple[World, list[Any], timedelta]:
    """`run`, and how long after its last tick the last decision sleeps."""
    actions: list[Any] = []
    now, sleep = T0, timedelta()
    for _ in range(ticks):
        decision = decide(spec, world.status, observed(world, **extra), now)
        applied = apply(world, decision, now)
        assert applied.decision.wake_at is not None
        sleep = applied.decision.wake_at - now
        world, now = applied.world, now + timedelta(minutes=1)
        actions += applied.decision.actions
    return world, actions, sleep


def changes(actions: list[Any]) -> list[GeneratedChange]:
    return [action.change for action in actions if isinstance(action, ChangeGenerated)]


def test_the_candidate_is_generated_before_any_weight_is_written_and_promoted() -> None:
    world, actions = run(one_edit_spec(), World(generated=NOTHING), ticks=6)
    first_write = next(i for i, a in enumerate(actions) if isinstance(a, WriteRoute) and a.weight)
    assert actions.index(ChangeGenerated(GeneratedChange.CREATE)) < first_write
    assert changes(actions).count(GeneratedChange.CREATE) == 1  # asked for only while missing
    assert world.status.phase is Phase.SUCCEEDED
    assert world.generated is not None and world.generated.incumbent_patched


def test_promote_into_incumbent_hands_the_traffic_back_once_the_incumbent_rolled_out() -> None:
    spec = one_edit_spec()
    world, _ = run(spec, World(generated=NOTHING), ticks=8)
    assert world.route == live(100)  # the incumbent is still rolling out the patch: the candidate serves
    assert world.generated is not None and world.generated.complete
    rolled_out = replace(world, generated=replace(world.generated, incumbent_rolled_out=True))
    world, actions, sleep = run_until(spec, rolled_out, ticks=3)
    assert sleep >= FINISHED_RESYNC  # nothing left to write: the route carries what status says
    weights = [a.weight for a in actions if isinstance(a, WriteRoute)]
    assert weights[0] == 0 and GeneratedChange.REMOVE in changes(actions)
    assert actions.index(ChangeGenerated(GeneratedChange.REMOVE)) > actions.index(WriteRoute(0, 0, False))
    assert world.route == live(0) and world.generated is not None
    assert world.status.message == "the incumbent chat-v1 carries the promoted patch and takes all traffic"
    assert not (world.generated.deployment or world.generated.service or world.generated.backend_refs)
    assert world.status.phase is Phase.SUCCEEDED and not world.finalizer


def test_retire_incumbent_releases_the_candidate_and_scales_the_incumbent_down() -> None:
    world, actions = run(one_edit_spec("RetireIncumbent"), World(generated=NOTHING), ticks=8)
    assert world.status.phase is Phase.SUCCEEDED and world.route == live(100)
    assert GeneratedChange.RELEASE in changes(actions) and GeneratedChange.REMOVE not in changes(actions)
    assert ScaleDownIncumbent("chat-v1") in actions and world.incumbent_replicas == 0
    assert world.generated is not None and world.generated.deployment and not world.generated.owned
    assert not world.finalizer  # deleting the rollout now leaves the released candidate serving


def test_a_rolled_back_one_edit_rollout_leaves_nothing_generated() -> None:
    spec = one_edit_spec()
    world, _ = run(spec, World(generated=NOTHING), ticks=2)
    assert world.route == live(50)
    world, actions = run(spec, world, ticks=3, command=command(CommandAction.ABORT))
    assert world.status.phase is Phase.ROLLED_BACK
    assert world.route == live(0) and world.generated == NOTHING and not world.finalizer
    assert actions.index(ChangeGenerated(GeneratedChange.REMOVE)) > actions.index(WriteRoute(0, 0, False))


def test_deleting_mid_step_returns_the_traffic_then_removes_what_was_generated() -> None:
    spec = one_edit_spec(onDelete="Leave")  # the generated candidate goes with its rollout regardless
    world, _ = run(spec, World(generated=NOTHING), ticks=2)
    assert world.route == live(50) and world.finalizer
    deletion = decide_generated_deletion(spec, world.status, world.route, True, None, world.generated)
    gone = apply(world, deletion, T0).world
    assert gone.route == live(0) and gone.generated == NOTHING and not gone.finalizer


def test_a_deletion_writes_no_weight_on_a_rule_another_rollout_has_claimed() -> None:
    """The generated candidate's weight returns as any deletion's does: never over the claim of
    another rollout on the same route rule (core/holds.py); its objects still go."""
    spec = one_edit_spec(onDelete="Leave")
    world, _ = run(spec, World(generated=NOTHING), ticks=2)
    assert isinstance(world.route, LiveRoute)
    other = RolloutRef(namespace="serving", name="other", uid="uid-2")
    claimed = replace(world.route, owners=frozenset({other}))
    deletion = decide_generated_deletion(spec, world.status, claimed, True, None, world.generated)
    assert not [action for action in deletion.actions if isinstance(action, WriteRoute)], deletion.actions
    assert ChangeGenerated(GeneratedChange.REMOVE) in deletion.actions


def test_a_deletion_whose_weight_did_not_take_removes_nothing_yet() -> None:
    spec = one_edit_spec()
    world, _ = run(spec, World(generated=NOTHING), ticks=2)
    refused = replace(world, router=Router(refusal=WriteFailed("changed under every attempt")))
    deletion = decide_generated_deletion(spec, world.status, world.route, True, None, world.generated)
    kept = apply(refused, deletion, T0).world
    assert kept.generated == world.generated and kept.finalizer and kept.route == live(50)


def test_a_watch_that_scales_the_incumbent_down_leaves_an_incumbent_promoted_into_alone() -> None:
    """The incumbent takes the patch and then all traffic: scaled to 0 it could take neither, and a
    deletion would return the traffic to nothing (a policy's watch may ask for the scale-down)."""
    analysis = {
        "prometheus": {"address": "http://prometheus.monitoring:9090"},
        "metrics": [{"name": "errors", "preset": "errorRate", "max": 0.01}],
    }
    window = {"watch": {"duration": "1m", "scaleDownIncumbent": True}, "analysis": analysis}
    promoted = one_edit_spec().model_dump(by_alias=True, exclude_none=True)
    retired = one_edit_spec("RetireIncumbent").model_dump(by_alias=True, exclude_none=True)
    assert not scales_down_incumbent(parse_spec({**promoted, **window}))
    assert scales_down_incumbent(parse_spec({**retired, **window}))
