"""A side as a group of workloads with roles (spec.*.members): prefill, decode, endpoint picker, router."""

from typing import Annotated, Literal, Self

from pydantic import ConfigDict, Field, model_validator

from modelgate.api.errors import FieldPathError
from modelgate.api.fields import ObjectName, PodRegex
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.specmodel import SpecModel
from modelgate.api.workload_object import WorkloadObjectRef

MemberRole = Literal["prefill", "decode", "endpointPicker", "router"]
MEMBER_ROLES: tuple[MemberRole, ...] = ("prefill", "decode", "endpointPicker", "router")
MAX_MEMBERS = len(MEMBER_ROLES)
ONE_WORKLOAD = "set exactly one of deployment or workload"
UNIQUE_ROLES = "each role at most once: a side has one workload per role"


class GroupMember(SpecModel):
    """One workload of a side's group, by its role in serving the revision."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule("has(self.deployment) != has(self.workload)", message=ONE_WORKLOAD)
        )
    )

    role: MemberRole = Field(
        description="What the workload does for its revision: prefill, decode, endpointPicker (a "
        "per-revision endpoint picker) or router (a per-revision router in front of the others)."
    )
    deployment: ObjectName | None = Field(None, description="A Deployment in the ModelRollout's namespace.")
    workload: WorkloadObjectRef | None = Field(
        None, description="Any workload (spec.*.workload's kinds), by apiVersion, kind and name."
    )
    # None means the default: the Deployment's own Pods, or the Pods the workload selects.
    pod_regex: PodRegex | None = Field(
        None,
        description="Regular expression (RE2, fully anchored) matched against the `pod` label to pick "
        "this member's series, for a metric naming its role (spec.analysis.metrics[].role). Defaults "
        "to the names of the member's own Pods.",
    )

    @model_validator(mode="after")
    def _one_workload(self) -> Self:
        if (self.deployment is None) == (self.workload is None):
            raise ValueError(ONE_WORKLOAD)
        return self

    @property
    def kind(self) -> str:
        return "Deployment" if self.workload is None else self.workload.kind

    @property
    def name(self) -> str:
        name = self.deployment if self.workload is None else self.workload.name
        assert name is not None  # _one_workload
        return name


Members = Annotated[tuple[GroupMember, ...], Field(min_length=1, max_length=MAX_MEMBERS)]

MEMBERS_DESCRIPTION = (
    "The workloads that serve this side's revision together, by role (docs/topologies/prefill-decode.md): "
    "they are available, judged, rolled back and scaled down as one. The side's deployment or "
    "inferencePool stays the traffic target (what the route weighs); with a group, both sides must "
    "have the same roles."
)


def unique_roles_rule() -> CelRule:
    return CelRule(
        "!has(self.members) || self.members.all(m, self.members.exists_one(n, n.role == m.role))",
        field_path=".members",
        message=UNIQUE_ROLES,
    )


def check_unique_roles(members: tuple[GroupMember, ...] | None) -> None:
    roles = [member.role for member in members or ()]
    if len(set(roles)) != len(roles):
        raise FieldPathError("members", UNIQUE_ROLES)


def same_roles_rule() -> CelRule:
    """Both sides have members with the same roles, or neither has any."""
    return CelRule(
        "has(self.incumbent.members) == has(self.candidate.members) && (!has(self.candidate.members) "
        "|| (size(self.candidate.members) == size(self.incumbent.members) "
        "&& self.candidate.members.all(m, self.incumbent.members.exists(n, n.role == m.role))))",
        field_path=".candidate.members",
        message="must have the roles of spec.incumbent.members, and only those: a revision's "
        "workloads are released together, never one role of a revision behind another's",
    )


def role_differences(
    incumbent: tuple[GroupMember, ...] | None, candidate: tuple[GroupMember, ...] | None
) -> str:
    """What keeps the sides' groups from matching (empty: they match)."""
    ours = {member.role for member in candidate or ()}
    theirs = {member.role for member in incumbent or ()}
    if ours == theirs:
        return ""
    missing = ", ".join(sorted(theirs - ours)) or "none"
    extra = ", ".join(sorted(ours - theirs)) or "none"
    return (
        f"must have the roles of spec.incumbent.members, and only those (missing: {missing}; not in "
        f"the incumbent: {extra}): a revision's workloads are released together, never one role of a "
        "revision behind another's"
    )


SHARED_WORKLOAD = (
    "names a workload of spec.incumbent: a workload is one revision's, and each side's is scaled, "
    "judged and taken off the route as that side's"
)


def _same_member(a: str, b: str) -> str:
    return (
        f"(has({a}.deployment) && has({b}.deployment) && {a}.deployment == {b}.deployment) "
        f"|| (has({a}.workload) && has({b}.workload) && {a}.workload.kind == {b}.workload.kind "
        f"&& {a}.workload.name == {b}.workload.name)"
    )


def shared_workload_rules() -> tuple[CelRule, ...]:
    """No workload on both sides: not a member of each, nor one side's Deployment among the other's
    members (the validator also compares the other spellings, kube kinds by name)."""
    members_each = CelRule(
        "!has(self.incumbent.members) || !has(self.candidate.members) || self.candidate.members.all(c, "
        f"!self.incumbent.members.exists(i, {_same_member('c', 'i')}))",
        field_path=".candidate.members",
        message=SHARED_WORKLOAD,
    )
    return members_each, *(
        CelRule(
            f"!has(self.{grouped}.members) || !has(self.{single}.deployment) || !self.{grouped}.members"
            f".exists(m, has(m.deployment) && m.deployment == self.{single}.deployment)",
            field_path=f".{field}",
            message=SHARED_WORKLOAD,
        )
        for grouped, single, field in (
            ("incumbent", "candidate", "candidate.deployment"),
            ("candidate", "incumbent", "candidate.members"),
        )
    )
