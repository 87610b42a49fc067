"""A grouped side's workloads (spec.*.members): each member read, and scaled down, as the side
of its kind would be (kube/workloads.py)."""

from __future__ import annotations

from modelgate.api.group_members import GroupMember
from modelgate.api.workload_ref import WorkloadRef
from modelgate.kube.objects import DeploymentAvailability
from modelgate.kube.workloads import Workloads


class GroupMembers(Workloads):
    def member_availability(self, namespace: str, member: GroupMember, field: str) -> DeploymentAvailability:
        """Whether the member can serve; `field` names it (spec.<side>.members[i])."""
        return self.side_availability(namespace, as_side(member), field)

    def member_ready_replicas(self, namespace: str, member: GroupMember) -> int:
        return self.side_ready_replicas(namespace, as_side(member))

    def member_pods(self, namespace: str, member: GroupMember) -> list[str]:
        """The names of the member's serving Pods, but for those being deleted."""
        side = as_side(member)
        if side.is_deployment:
            return self.deployment_pods(namespace, member.name)
        return sorted(pod.name for pod in self.side_serving_pods(namespace, side) or [])

    def scale_member(self, namespace: str, member: GroupMember, replicas: int) -> None:
        self.scale_side(namespace, as_side(member), replicas)


def as_side(member: GroupMember) -> WorkloadRef:
    """The member as a side of its own kind: its workload, read and scaled as a side's."""
    if member.workload is None:
        return WorkloadRef.model_validate({"deployment": member.name})
    return WorkloadRef.model_validate({"workload": member.workload.model_dump(by_alias=True)})
