"""spec.policyRef: the ModelRolloutPolicy or ClusterModelRolloutPolicy a rollout takes its plan from."""

from enum import StrEnum

from pydantic import Field

from modelgate.api.fields import ObjectName
from modelgate.api.specmodel import SpecModel

POLICY_KIND = "ModelRolloutPolicy"
POLICY_PLURAL = "modelrolloutpolicies"
CLUSTER_POLICY_KIND = "ClusterModelRolloutPolicy"
CLUSTER_POLICY_PLURAL = "clustermodelrolloutpolicies"


class PolicyKind(StrEnum):
    NAMESPACED = POLICY_KIND
    CLUSTER = CLUSTER_POLICY_KIND

    @property
    def plural(self) -> str:
        return POLICY_PLURAL if self is PolicyKind.NAMESPACED else CLUSTER_POLICY_PLURAL


class PolicyRef(SpecModel):
    """The policy a rollout takes the sections it does not set from."""

    kind: PolicyKind = Field(
        description="ModelRolloutPolicy (in the rollout's namespace) or ClusterModelRolloutPolicy "
        "(cluster-scoped, written by the platform team)."
    )
    name: ObjectName = Field(description="The policy's name.")

    def describe(self, namespace: str) -> str:
        """The policy as a person finds it: its kind, name and, when namespaced, namespace."""
        where = f" in namespace {namespace}" if self.kind is PolicyKind.NAMESPACED else ""
        return f"{self.kind.value} {self.name}{where}"
