"""A grouped side's workloads (spec.*.members): each member's availability, Ready replicas, Pods
and scale-down; Deployments through today's Deployment code, other kinds through one function."""

from __future__ import annotations

from dataclasses import dataclass

from modelgate.api.group_members import GroupMember
from modelgate.api.workload_object import WorkloadObjectRef
from modelgate.kube.api_errors import KubeError
from modelgate.kube.objects import DeploymentAvailability
from modelgate.kube.pools import PoolPod
from modelgate.kube.workloads import Workloads


@dataclass(frozen=True)
class WorkloadReading:
    """What a tick reads of a workload that is not a Deployment."""

    availability: DeploymentAvailability
    ready_replicas: int
    pods: tuple[PoolPod, ...]


def is_deployment(member: GroupMember) -> bool:
    workload = member.workload
    return workload is None or (workload.kind == "Deployment" and workload.api_version == "apps/v1")


class GroupMembers(Workloads):
    def member_availability(self, namespace: str, member: GroupMember) -> DeploymentAvailability:
        """Whether the member can serve (the engine names the member's field, core/policy.py)."""
        if is_deployment(member):
            return self.deployment_availability(namespace, member.name)
        return self.other_workload(namespace, _other(member)).availability

    def member_ready_replicas(self, namespace: str, member: GroupMember) -> int:
        if is_deployment(member):
            return self.side_ready_replicas(namespace, "Deployment", member.name)
        return self.other_workload(namespace, _other(member)).ready_replicas

    def member_pods(self, namespace: str, member: GroupMember) -> list[str]:
        """The names of the member's Pods, but for those being deleted."""
        if is_deployment(member):
            return self.deployment_pods(namespace, member.name)
        pods = self.other_workload(namespace, _other(member)).pods
        return sorted(pod.name for pod in pods)

    def scale_member(self, namespace: str, member: GroupMember, replicas: int) -> None:
        if is_deployment(member):
            self.scale_deployment(namespace, member.name, replicas)
            return
        raise KubeError(None, f"{_unread(_other(member))}: scale it down by hand")

    def other_workload(self, namespace: str, ref: WorkloadObjectRef) -> WorkloadReading:
        """A member that is not a Deployment (a StatefulSet, a LeaderWorkerSet, any kind with a scale
        subresource): the one place the any-workload reader (issue 38 item 1, kube code that reads a
        workload by its scale subresource and Pod selector) plugs in. Until it does, such a member
        fails closed: not Available, saying why, so a group never takes traffic unread."""
        del namespace  # read by the any-workload reader
        return WorkloadReading(DeploymentAvailability(False, False, _unread(ref)), 0, ())


def _other(member: GroupMember) -> WorkloadObjectRef:
    assert member.workload is not None, "a member is a Deployment or a workload"
    return member.workload


def _unread(ref: WorkloadObjectRef) -> str:
    return f"{ref.kind} {ref.name} ({ref.api_version}) cannot be read as a group member yet"
