"""A rollout's spec resolved with its policy: the rollout's sections where it sets them, else the policy's.

The level that overrides is the section (steps, analysis, gate, rollback, progressDeadlines, capacity,
watch, notifications): a section the rollout sets replaces the policy's whole, as a Flagger Canary's
analysis or an Argo Rollouts strategy is one block written in one place. Nothing is merged within a
section (no metric by name): a section is read in one object, so where a threshold comes from is never
a question. Pure: the operator reads the policy, this decides what it means.
"""

import hashlib
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from modelgate.api.errors import InvalidSpecError
from modelgate.api.policy_ref import PolicyRef
from modelgate.api.rollout_policy import POLICY_SECTIONS, SPEC_HASH_LENGTH, ModelRolloutPolicySpec
from modelgate.api.spec import ModelRolloutSpec, parse_spec

POLICY_REF_FIELD = "policyRef"


class PolicyProblem(InvalidSpecError):
    """A policy that does not resolve to a usable plan; each problem names the field and, where the
    policy supplied it, the policy."""

    def __init__(self, problems: tuple[str, ...], ref: PolicyRef, namespace: str) -> None:
        super().__init__(problems)
        self.args = (f"spec.policyRef: {ref.describe(namespace)}: " + "; ".join(problems),)


def section_alias(name: str) -> str:
    alias = ModelRolloutSpec.model_fields[name].alias
    assert alias is not None, "every spec field has its camelCase alias"
    return alias


def parse_policy_spec(raw: Mapping[str, Any], ref: PolicyRef, namespace: str) -> ModelRolloutPolicySpec:
    """A policy's spec as read from the API server; PolicyProblem names the policy's bad fields."""
    try:
        return ModelRolloutPolicySpec.model_validate(raw)
    except ValidationError as error:
        problems = InvalidSpecError.from_validation_error(error, root="spec").problems
        raise PolicyProblem(tuple(f"the policy's {p}" for p in problems), ref, namespace) from None


def policy_json(policy: ModelRolloutPolicySpec) -> str:
    """The policy's spec as pinned in status.policy.spec: what was written, compact."""
    return policy.model_dump_json(by_alias=True, exclude_unset=True)


def resolve(
    own: Mapping[str, Any], policy: ModelRolloutPolicySpec, ref: PolicyRef, namespace: str
) -> ModelRolloutSpec:
    """The rollout's spec (`own`, as written) with each section it does not set taken from `policy`,
    validated as one spec; PolicyProblem lists each problem, saying which came from the policy."""
    merged = {key: value for key, value in own.items() if key != POLICY_REF_FIELD}
    written = policy.model_dump(mode="json", by_alias=True, exclude_unset=True)
    taken = set()
    for name in POLICY_SECTIONS:
        alias = section_alias(name)
        if alias not in merged and written.get(alias) is not None:
            merged[alias] = written[alias]
            taken.add(alias)
    if "steps" not in merged:
        problem = "spec.steps: required: neither the rollout nor its policy sets steps"
        raise PolicyProblem((problem,), ref, namespace)
    try:
        resolved = parse_spec(merged)
    except InvalidSpecError as error:
        raise PolicyProblem(tuple(_origin(p, taken) for p in error.problems), ref, namespace) from None
    return resolved.model_copy(update={"policy_ref": ref})


def _origin(problem: str, taken: set[str]) -> str:
    """`problem` with the policy named as its source when the field's section came from it."""
    path = problem.removeprefix("spec.")
    section = path.split(":", 1)[0].split(".", 1)[0].split("[", 1)[0]
    if section in taken:
        return f"{problem} (spec.{section} from the policy)"
    return problem


def plan_hash(spec: ModelRolloutSpec) -> str:
    """The resolved plan's hash: the same plan, the same hash, whichever objects it was written in."""
    text = spec.model_dump_json(by_alias=True, exclude={"policy_ref"})
    return hashlib.sha256(text.encode()).hexdigest()[:SPEC_HASH_LENGTH]
