"""The rules of a one-edit rollout's spec (spec.candidatePatch) and the candidate it stands for.

A spec with candidatePatch names no candidate and no candidateBackend: the operator reads it as
naming the Deployment and the Service it generates (api/candidate_patch.py's generated_name), so
everything downstream of the spec sees an ordinary pair of Deployments.
"""

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from modelgate.api.candidate_patch import CandidatePatch, generated_name
from modelgate.api.errors import FieldPathError
from modelgate.api.markers import CelRule

ONE_CANDIDATE = "set exactly one of candidate or candidatePatch"
PATCH_NEEDS_DEPLOYMENT = "a candidatePatch is applied to a Deployment: set spec.incumbent.deployment"
PATCH_OF_ONE_WORKLOAD = (
    "a candidatePatch generates one Deployment: an incumbent of several workloads "
    "(spec.incumbent.members) needs a spec.candidate with the same roles"
)
PATCH_NEEDS_GATEWAY_API = (
    "a candidatePatch needs the gatewayAPI router: the operator adds the candidate's backendRef to its route"
)
BACKEND_IS_GENERATED = (
    "must be absent with spec.candidatePatch: the operator names the candidate's Service it generates"
)
BACKEND_REQUIRED = (
    "required: the backendRef that reaches spec.candidate (absent only with spec.candidatePatch)"
)

ONE_EDIT_RULES = (
    CelRule(
        "has(self.candidate) != has(self.candidatePatch)", field_path=".candidate", message=ONE_CANDIDATE
    ),
    CelRule(
        "!has(self.candidatePatch) || has(self.incumbent.deployment)",
        field_path=".candidatePatch",
        message=PATCH_NEEDS_DEPLOYMENT,
    ),
    CelRule(
        "!has(self.candidatePatch) || !has(self.incumbent.members)",
        field_path=".candidatePatch",
        message=PATCH_OF_ONE_WORKLOAD,
    ),
    CelRule(
        "!has(self.candidatePatch) || has(self.trafficRouting.gatewayAPI)",
        field_path=".candidatePatch",
        message=PATCH_NEEDS_GATEWAY_API,
    ),
    CelRule(
        "!has(self.candidatePatch) || !has(self.trafficRouting.gatewayAPI) "
        "|| !has(self.trafficRouting.gatewayAPI.candidateBackend)",
        field_path=".trafficRouting.gatewayAPI.candidateBackend",
        message=BACKEND_IS_GENERATED,
    ),
    CelRule(
        "has(self.candidatePatch) || !has(self.trafficRouting.gatewayAPI) "
        "|| has(self.trafficRouting.gatewayAPI.candidateBackend)",
        field_path=".trafficRouting.gatewayAPI.candidateBackend",
        message=BACKEND_REQUIRED,
    ),
)


def with_candidate(*rules: CelRule) -> tuple[CelRule, ...]:
    """Rules about spec.candidate, holding only where it is set (in CEL, reading an absent field is
    an error, not false)."""
    return tuple(
        CelRule(
            f"!has(self.candidate) || ({rule.rule})",
            message=rule.message,
            message_expression=rule.message_expression,
            field_path=rule.field_path,
        )
        for rule in rules
    )


def _key(data: Mapping[str, Any], alias: str, name: str) -> Any:
    """A field of a raw spec by its alias or its name; a model given in its place, as a mapping."""
    value = data.get(alias, data.get(name))
    return value.model_dump(by_alias=True, exclude_none=True) if hasattr(value, "model_dump") else value


def with_generated_candidate(data: Any) -> Any:
    """The raw spec with the candidate and candidateBackend that its candidatePatch stands for.
    A spec already carrying exactly those (one dumped after parsing) passes as it is; a patch that
    is not valid is left to its own field's errors."""
    if not isinstance(data, Mapping):
        return data
    raw_patch = _key(data, "candidatePatch", "candidate_patch")
    candidate = _key(data, "candidate", "candidate")
    if raw_patch is None:
        if candidate is None:
            raise FieldPathError("candidate", ONE_CANDIDATE)
        _require_backend(data)
        return data
    incumbent = _key(data, "incumbent", "incumbent")
    deployment = incumbent.get("deployment") if isinstance(incumbent, Mapping) else None
    if deployment is None:
        raise FieldPathError("candidatePatch", PATCH_NEEDS_DEPLOYMENT)
    if incumbent.get("members") is not None:
        raise FieldPathError("candidatePatch", PATCH_OF_ONE_WORKLOAD)
    try:
        patch = CandidatePatch.model_validate(raw_patch)
    except ValidationError:
        return data
    name = generated_name(str(deployment), patch)
    generated = {"deployment": name} if patch.model is None else {"deployment": name, "model": patch.model}
    written = candidate if isinstance(candidate, Mapping) else {"": candidate}  # not a side at all
    if candidate is not None and {k: v for k, v in written.items() if v is not None} != generated:
        raise FieldPathError("candidate", ONE_CANDIDATE)
    routing = _key(data, "trafficRouting", "traffic_routing")
    gateway = _key(routing, "gatewayAPI", "gateway_api") if isinstance(routing, Mapping) else None
    if not isinstance(gateway, Mapping):
        raise FieldPathError("candidatePatch", PATCH_NEEDS_GATEWAY_API)
    backend = _key(gateway, "candidateBackend", "candidate_backend")
    if backend is not None and (candidate is None or backend != name):
        raise FieldPathError("trafficRouting.gatewayAPI.candidateBackend", BACKEND_IS_GENERATED)
    filled_routing = {**routing, "gatewayAPI": {**gateway, "candidateBackend": name}}
    filled_routing.pop("gateway_api", None)
    return {**data, "candidate": generated, "trafficRouting": filled_routing}


def _require_backend(data: Mapping[str, Any]) -> None:
    routing = _key(data, "trafficRouting", "traffic_routing")
    gateway = _key(routing, "gatewayAPI", "gateway_api") if isinstance(routing, Mapping) else None
    if isinstance(gateway, Mapping) and _key(gateway, "candidateBackend", "candidate_backend") is None:
        raise FieldPathError("trafficRouting.gatewayAPI.candidateBackend", BACKEND_REQUIRED)
