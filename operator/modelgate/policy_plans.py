"""The plan a rollout with spec.policyRef decides with: the policy pinned when its candidate started.

Pure: given the rollout's own spec, its status and the policy as the watch cache has it (or None),
`plan_for` returns the resolved spec and the status to decide from (status.policy pinned, the
PolicyDrift condition, a `modelgate repin` recorded), or `Unresolved` when no plan can be made (the
reconciler then holds the rollout at weight 0: core.endings.decide_policy_unresolved). The engine
only ever sees the resolved spec.

- A rollout whose candidate has no pin pins the policy as it is (its generation and spec).
- With a pin, the pinned spec is used whatever the policy became; a policy edited (or deleted) since
  sets PolicyDrift True, naming both generations. Nothing else changes.
- `modelgate repin` pins the policy as it is now, when it resolves; otherwise it is Ignored, saying why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from modelgate.api import (
    CommandResult,
    LastCommand,
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    parse_spec,
    parse_status,
)
from modelgate.api.errors import InvalidSpecError
from modelgate.api.policy_ref import PolicyRef
from modelgate.api.policy_resolution import (
    PolicyProblem,
    parse_policy_spec,
    plan_hash,
    policy_json,
    resolve,
)
from modelgate.api.rollout_policy import MAX_PINNED_SPEC, ModelRolloutPolicySpec, PinnedPolicy
from modelgate.clock import utc_now
from modelgate.core import Command, CommandAction, UnreadableCommand, reasons
from modelgate.core.reasons import ConditionType, Reason


@dataclass(frozen=True)
class LivePolicy:
    """The policy as the API server has it now."""

    generation: int
    spec: Mapping[str, Any]


@dataclass(frozen=True)
class PolicyPlan:
    spec: ModelRolloutSpec
    status: ModelRolloutStatus


@dataclass(frozen=True)
class Unresolved:
    """No plan: the policy is missing or does not resolve with the rollout's spec, and none is pinned."""

    message: str


@dataclass(frozen=True)
class PolicyTick:
    """What `plan_for` reads: the rollout's spec as written (`own`) and parsed, its namespace and
    generation, the status the tick starts from, the pending command and the time."""

    own: Mapping[str, Any]
    spec: ModelRolloutSpec
    namespace: str
    status: ModelRolloutStatus
    command: Command | UnreadableCommand | None
    generation: int
    now: datetime

    @property
    def ref(self) -> PolicyRef:
        assert self.spec.policy_ref is not None, "only a rollout with spec.policyRef has a policy plan"
        return self.spec.policy_ref

    @property
    def policy_name(self) -> str:
        return self.ref.describe(self.namespace)


def plan_for(tick: PolicyTick, live: LivePolicy | None) -> PolicyPlan | Unresolved:
    """The plan of a rollout with spec.policyRef (see the module's docstring). A rollout spec that does
    not resolve with its pinned policy raises PolicyProblem: the rollout's own edit, a spec problem."""
    pin = _pin_of(tick)
    repin = _repin_asked(tick)
    if pin is not None and repin is None:
        return _pinned(tick, pin, live)
    made = _new_pin(tick, live)
    if repin is None or (pin is None and isinstance(made, Unresolved)):
        return made  # without a pin, a repin waits with the rollout for the policy to resolve
    if isinstance(made, Unresolved):
        assert pin is not None
        refused = f"`modelgate repin` ignored: {made.message}; the pinned plan stays"
        return _recorded(tick, _pinned(tick, pin, live), repin, CommandResult.IGNORED, refused)
    before = "none" if pin is None else str(pin.generation)
    assert made.status.policy is not None
    adopted = f"adopted {tick.policy_name} at generation {made.status.policy.generation} (pinned: {before})"
    return _recorded(tick, made, repin, CommandResult.APPLIED, adopted)


def pinned_spec(tick: PolicyTick) -> ModelRolloutSpec | None:
    """The resolved spec of the pin the status holds for this candidate, None without one (for a
    deletion: what spec.rollback.onDelete says is the plan's)."""
    pin = _pin_of(tick)
    if pin is None:
        return None
    return resolve(tick.own, _pinned_policy(tick, pin), tick.ref, tick.namespace)


def _pin_of(tick: PolicyTick) -> PinnedPolicy | None:
    """The pin this rollout's candidate started with: one of another policy or candidate is stale."""
    pin = tick.status.policy
    ref = tick.ref
    if pin is None or (pin.kind, pin.name) != (ref.kind, ref.name):
        return None
    return pin if pin.candidate == tick.spec.candidate.identity else None


def _repin_asked(tick: PolicyTick) -> Command | None:
    command, handled = tick.command, tick.status.last_command
    if not isinstance(command, Command) or command.action is not CommandAction.REPIN:
        return None
    return None if handled is not None and handled.id == command.id else command


def _pinned_policy(tick: PolicyTick, pin: PinnedPolicy) -> ModelRolloutPolicySpec:
    try:
        return ModelRolloutPolicySpec.model_validate_json(pin.spec)
    except ValueError as error:  # written by the operator; only an older operator's could fail
        raise InvalidSpecError([f"status.policy.spec: {error}"], root="status") from None


def _pinned(tick: PolicyTick, pin: PinnedPolicy, live: LivePolicy | None) -> PolicyPlan:
    spec = resolve(tick.own, _pinned_policy(tick, pin), tick.ref, tick.namespace)
    pin = _with_hash(pin, spec)
    status = _with_drift(tick, tick.status.model_copy(update={"policy": pin}), pin, live)
    return PolicyPlan(spec, status)


def _new_pin(tick: PolicyTick, live: LivePolicy | None) -> PolicyPlan | Unresolved:
    name = tick.policy_name
    if live is None:
        return Unresolved(
            f"spec.policyRef: {name} not found; the candidate stays at weight 0 until it exists"
        )
    try:
        policy = parse_policy_spec(live.spec, tick.ref, tick.namespace)
        spec = resolve(tick.own, policy, tick.ref, tick.namespace)
    except PolicyProblem as problem:
        return Unresolved(f"{problem}; the candidate stays at weight 0 until it resolves")
    pinned = policy_json(policy)
    if len(pinned) > MAX_PINNED_SPEC:
        return Unresolved(
            f"spec.policyRef: {name}'s spec is longer than {MAX_PINNED_SPEC} characters of JSON"
        )
    ref = tick.ref
    pin = PinnedPolicy(
        kind=ref.kind,
        name=ref.name,
        generation=live.generation,
        candidate=tick.spec.candidate.identity,
        spec=pinned,
        resolved_hash=plan_hash(spec),
    )
    status = tick.status.model_copy(update={"policy": pin})
    if status.pause is not None and status.pause.reason is PauseReason.POLICY_UNRESOLVED:
        status = status.model_copy(update={"pause": None})
    return PolicyPlan(spec, _with_drift(tick, status, pin, live))


def _with_hash(pin: PinnedPolicy, spec: ModelRolloutSpec) -> PinnedPolicy:
    resolved = plan_hash(spec)
    return pin if pin.resolved_hash == resolved else pin.model_copy(update={"resolved_hash": resolved})


def _with_drift(
    tick: PolicyTick, status: ModelRolloutStatus, pin: PinnedPolicy, live: LivePolicy | None
) -> ModelRolloutStatus:
    """PolicyDrift True while the policy is not the generation pinned; absent otherwise."""
    if live is not None and live.generation == pin.generation:
        kept = tuple(c for c in status.conditions if c.type != ConditionType.POLICY_DRIFT)
        return (
            status if len(kept) == len(status.conditions) else status.model_copy(update={"conditions": kept})
        )
    now_at = "was deleted" if live is None else f"is at generation {live.generation}"
    message = (
        f"{tick.policy_name} {now_at}; this rollout keeps generation {pin.generation} pinned until "
        "`modelgate repin` or its next candidate"
    )
    conditions = reasons.set_condition(
        status.conditions,
        ConditionType.POLICY_DRIFT,
        True,
        Reason.POLICY_CHANGED,
        message,
        tick.now,
        tick.generation,
    )
    return status.model_copy(update={"conditions": conditions})


def _recorded(
    tick: PolicyTick, plan: PolicyPlan, command: Command, result: CommandResult, message: str
) -> PolicyPlan:
    """The plan with the repin recorded in status.lastCommand (the engine then clears the annotation)."""
    handled = LastCommand(
        id=command.id,
        name=command.action.value,
        result=result,
        message=reasons.clip(message, reasons.ANALYSIS_MESSAGE),
        time=tick.now,
    )
    return PolicyPlan(plan.spec, plan.status.model_copy(update={"last_command": handled}))


def spec_in_force(body: Mapping[str, Any]) -> ModelRolloutSpec:
    """A rollout object's spec as its ticks decide with it: resolved with the policy pinned in its
    status when it names one (its own, unresolved, before a pin), for readers outside a tick."""
    own = body.get("spec") or {}
    spec = parse_spec(own)
    if spec.policy_ref is None:
        return spec
    meta = body["metadata"]
    status = parse_status(body.get("status") or {})
    tick = PolicyTick(own, spec, meta.get("namespace", ""), status, None, 0, utc_now())
    return pinned_spec(tick) or spec


def as_resolved(body: Mapping[str, Any]) -> dict[str, Any]:
    """The rollout object with its spec as in force (spec_in_force), for the CLI's views; as it is
    when that cannot be read (the views say what is wrong with it)."""
    try:
        spec = spec_in_force(body)
    except ValueError:
        return dict(body)
    return {**body, "spec": spec.model_dump(mode="json", by_alias=True, exclude_none=True)}
