"""A workload named by apiVersion, kind and name: a side's (spec.*.workload) or a group member's."""

from pydantic import Field

from modelgate.api.fields import ObjectName
from modelgate.api.specmodel import SpecModel


class WorkloadObjectRef(SpecModel):
    """A workload in the ModelRollout's namespace: apps/v1 Deployment or StatefulSet,
    leaderworkerset.x-k8s.io/v1 LeaderWorkerSet, or any kind with a scale subresource whose
    status names a Pod selector."""

    api_version: str = Field(
        alias="apiVersion",
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?$",
        max_length=253,
        description="The workload's API group and version, as in its manifest (apps/v1, "
        "leaderworkerset.x-k8s.io/v1).",
    )
    kind: str = Field(
        pattern=r"^[A-Z][A-Za-z0-9]{0,62}$",
        description="The workload's kind, as in its manifest (Deployment, StatefulSet, LeaderWorkerSet).",
    )
    name: ObjectName = Field(description="The workload's name, in the ModelRollout's namespace.")
