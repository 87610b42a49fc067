"""The plan a rollout with spec.policyRef decides with (policy_plans.py): pinned when its candidate
starts, kept when the policy changes or goes (PolicyDrift says so), adopted again by `modelgate repin`
or a new candidate; no policy and no pin holds the rollout at weight 0 (core.endings)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from rich.console import Console

from modelgate.api import (
    CommandResult,
    ConditionStatus,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RolloutPause,
    parse_spec,
)
from modelgate.cli.render.rollout import render_status
from modelgate.core import Command, CommandAction, SpecProblem, decide
from modelgate.core.endings import decide_policy_unresolved
from modelgate.core.model import PostEvents, WriteRoute
from modelgate.core.reasons import ConditionType
from modelgate.policy_plans import (
    LivePolicy,
    PolicyPlan,
    PolicyTick,
    Unresolved,
    as_resolved,
    plan_for,
    spec_in_force,
)
from tests.unit.engine_support import T0, command, make_spec, observe, weight
from tests.unit.test_policy_resolution import POLICY, own_spec

EDITED = {**POLICY, "steps": [{"setWeight": 30}, {"setWeight": 60}]}


def tick(
    status: ModelRolloutStatus | None = None,
    command: Command | None = None,
    candidate: str = "chat-v2",
    **sections: Any,
) -> PolicyTick:
    own = own_spec(**sections)
    own["candidate"] = {"deployment": candidate}
    own["trafficRouting"]["gatewayAPI"]["candidateBackend"] = candidate
    return PolicyTick(own, parse_spec(own), "team-a", status or ModelRolloutStatus(), command, 3, T0)


def planned(result: PolicyPlan | Unresolved) -> PolicyPlan:
    assert isinstance(result, PolicyPlan), result
    return result


def steps_of(plan: PolicyPlan) -> list[int | None]:
    return [step.set_weight for step in plan.spec.steps]


def drift(status: ModelRolloutStatus) -> str | None:
    """PolicyDrift's message while it is True; None when the condition is absent."""
    found = next((c for c in status.conditions if c.type == ConditionType.POLICY_DRIFT), None)
    if found is None:
        return None
    assert found.status is ConditionStatus.TRUE
    return found.message


def started() -> PolicyPlan:
    """A rollout of chat-v2 that pinned the policy at generation 1."""
    return planned(plan_for(tick(), LivePolicy(1, POLICY)))


def test_a_new_rollout_pins_the_policy_as_it_is() -> None:
    plan = started()
    pin = plan.status.policy
    assert pin is not None
    assert (pin.kind.value, pin.name, pin.generation) == ("ClusterModelRolloutPolicy", "vllm-gateway", 1)
    assert pin.candidate == plan.spec.candidate.identity
    assert len(pin.resolved_hash) == 16
    assert steps_of(plan) == [10, None, 50]
    assert drift(plan.status) is None


def test_an_edited_policy_changes_nothing_but_sets_drift() -> None:
    pinned = started()
    edited = planned(plan_for(tick(pinned.status), LivePolicy(2, EDITED)))
    assert steps_of(edited) == [10, None, 50]
    assert edited.spec == pinned.spec
    assert edited.status.policy == pinned.status.policy
    message = drift(edited.status)
    assert message is not None and "generation 2" in message and "generation 1 pinned" in message


def test_a_deleted_policy_keeps_the_pinned_plan_and_says_it_went() -> None:
    pinned = started()
    gone = planned(plan_for(tick(pinned.status), None))
    assert gone.spec == pinned.spec
    message = drift(gone.status)
    assert message is not None and "was deleted" in message


def test_repin_ends_the_drift() -> None:
    drifted = planned(plan_for(tick(started().status), LivePolicy(2, EDITED)))
    assert drift(drifted.status) is not None
    repinned = planned(
        plan_for(tick(drifted.status, Command(CommandAction.REPIN, "r-1")), LivePolicy(2, EDITED))
    )
    assert drift(repinned.status) is None


def test_repin_adopts_the_policy_as_it_is_now_and_is_recorded() -> None:
    pinned = started()
    repinned = planned(
        plan_for(tick(pinned.status, Command(CommandAction.REPIN, "r-1")), LivePolicy(2, EDITED))
    )
    assert steps_of(repinned) == [30, 60]
    assert repinned.status.policy is not None and repinned.status.policy.generation == 2
    handled = repinned.status.last_command
    assert handled is not None and (handled.id, handled.result) == ("r-1", CommandResult.APPLIED)
    # Handled once: the same command id again changes nothing.
    again = planned(
        plan_for(tick(repinned.status, Command(CommandAction.REPIN, "r-1")), LivePolicy(3, POLICY))
    )
    assert steps_of(again) == [30, 60]


def test_repin_of_a_missing_policy_is_ignored_and_the_pin_stays() -> None:
    pinned = started()
    refused = planned(plan_for(tick(pinned.status, Command(CommandAction.REPIN, "r-1")), None))
    assert refused.spec == pinned.spec
    handled = refused.status.last_command
    assert handled is not None and handled.result is CommandResult.IGNORED
    assert "not found" in handled.message


def test_a_new_candidate_pins_the_policy_as_it_is_then() -> None:
    pinned = started()
    next_rollout = planned(plan_for(tick(pinned.status, candidate="chat-v3"), LivePolicy(2, EDITED)))
    assert steps_of(next_rollout) == [30, 60]
    assert next_rollout.status.policy is not None and next_rollout.status.policy.generation == 2
    assert drift(next_rollout.status) is None


def test_the_rollouts_own_edit_applies_over_the_pinned_policy() -> None:
    pinned = started()
    edited = planned(plan_for(tick(pinned.status, steps=[{"setWeight": 5}]), LivePolicy(2, EDITED)))
    assert steps_of(edited) == [5]
    assert edited.status.policy is not None
    assert edited.status.policy.resolved_hash != pinned.status.policy.resolved_hash  # type: ignore[union-attr]


def test_a_missing_policy_without_a_pin_is_unresolved_naming_it() -> None:
    result = plan_for(tick(), None)
    assert isinstance(result, Unresolved)
    assert result.message.startswith("spec.policyRef: ClusterModelRolloutPolicy vllm-gateway not found")


def test_a_policy_that_does_not_resolve_is_unresolved_naming_the_field() -> None:
    result = plan_for(tick(), LivePolicy(1, {"analysis": POLICY["analysis"]}))
    assert isinstance(result, Unresolved)
    assert "spec.steps" in result.message and "vllm-gateway" in result.message


def test_a_policy_that_appears_ends_the_hold() -> None:
    held = ModelRolloutStatus(
        phase=Phase.PENDING,
        pause=RolloutPause(reason=PauseReason.POLICY_UNRESOLVED, since=T0, message="not found"),
    )
    plan = planned(plan_for(tick(held), LivePolicy(1, POLICY)))
    assert plan.status.pause is None
    assert plan.status.policy is not None


def test_the_hold_asks_for_weight_zero_and_says_so_once() -> None:
    at_twenty = ModelRolloutStatus(phase=Phase.PROGRESSING, current_weight=20, live_weight=20)
    problem = SpecProblem("spec.policyRef: ClusterModelRolloutPolicy vllm-gateway not found")
    held = decide_policy_unresolved(problem, at_twenty, 3, T0)
    assert held.status.phase is Phase.PENDING and held.status.current_weight == 0
    assert held.status.pause is not None and held.status.pause.reason is PauseReason.POLICY_UNRESOLVED
    assert WriteRoute(0, 0) in held.actions
    posted = [a for a in held.actions if isinstance(a, PostEvents)]
    assert [e.reason.value for a in posted for e in a.events] == ["PolicyUnresolved"]
    at_zero = held.status.model_copy(update={"live_weight": 0})
    again = decide_policy_unresolved(problem, at_zero, 3, T0 + timedelta(seconds=30))
    assert not [a for a in again.actions if isinstance(a, PostEvents | WriteRoute)]
    assert again.status.pause == held.status.pause  # since when it began


def pinned_object(pinned: PolicyPlan) -> dict[str, Any]:
    """The rollout object as the API server has it once the policy is pinned."""
    return {
        "metadata": {"namespace": "team-a", "name": "chat"},
        "spec": own_spec(),
        "status": pinned.status.to_patch(),
    }


def test_readers_outside_a_tick_see_the_pinned_plan() -> None:
    pinned = started()
    body = pinned_object(pinned)
    assert spec_in_force(body).steps == pinned.spec.steps
    unpinned = {**body, "status": {}}
    assert spec_in_force(unpinned).steps == ()


def test_repin_of_a_rollout_without_a_policy_is_ignored_saying_why() -> None:
    spec = make_spec(weight(50))
    status = decide(spec, ModelRolloutStatus(), observe(), T0).status
    decided = decide(spec, status, observe(command=command(CommandAction.REPIN)), T0 + timedelta(seconds=1))
    handled = decided.status.last_command
    assert handled is not None and handled.result is CommandResult.IGNORED
    assert "spec.policyRef" in handled.message


def test_the_clis_views_read_the_pinned_plan() -> None:
    body = pinned_object(started())
    shown = as_resolved(body)
    assert [step.get("setWeight") for step in shown["spec"]["steps"]] == [10, None, 50]
    assert shown["spec"]["policyRef"]["name"] == "vllm-gateway"
    broken = {**body, "spec": {**own_spec(), "incumbent": {}}}
    assert as_resolved(broken) == broken


def test_repin_without_a_pin_waits_with_the_rollout_for_the_policy() -> None:
    repin = Command(CommandAction.REPIN, "r-1")
    assert isinstance(plan_for(tick(command=repin), None), Unresolved)
    adopted = planned(plan_for(tick(command=repin), LivePolicy(4, POLICY)))
    handled = adopted.status.last_command
    assert handled is not None and handled.result is CommandResult.APPLIED
    assert adopted.status.policy is not None and adopted.status.policy.generation == 4


def test_modelgate_status_says_what_ends_the_hold() -> None:
    problem = SpecProblem("spec.policyRef: ClusterModelRolloutPolicy vllm-gateway not found")
    held = decide_policy_unresolved(problem, ModelRolloutStatus(), 1, T0).status
    body = {
        "metadata": {"namespace": "team-a", "name": "chat"},
        "spec": own_spec(),
        "status": held.to_patch(),
    }
    shown = Console(width=200, record=True)
    shown.print(render_status(as_resolved(body)))
    text = shown.export_text()
    assert "PolicyUnresolved since" in text
    assert "it ends when spec.policyRef resolves" in text and "vllm-gateway not found" in text
