"""Who steers a route rule. A rollout claims each rule it writes (an annotation on the route object,
routers/claims.py), so that every replica and shard sees one owner; ModelRollout.status.routeOwner
names the owner when it is another rollout."""

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from modelgate.api.statusmodel import StatusModel

# metadata.name and metadata.namespace of a Kubernetes object, and a uid as the API server writes it.
_NAME = StringConstraints(max_length=253)
_UID = StringConstraints(max_length=64)


class RolloutRef(StatusModel):
    """One ModelRollout, down to its uid: a rollout deleted and created again under the same name is
    another rollout."""

    namespace: Annotated[str, _NAME] = Field(description="The rollout's namespace.")
    name: Annotated[str, _NAME] = Field(description="The rollout's name.")
    uid: Annotated[str, _UID] = Field(description="The rollout's metadata.uid.")

    def __str__(self) -> str:
        return f"ModelRollout {self.namespace}/{self.name}"

    @classmethod
    def of(cls, metadata: Mapping[str, Any]) -> "RolloutRef":
        """The rollout whose metadata this is."""
        return cls(namespace=metadata["namespace"], name=metadata["name"], uid=str(metadata.get("uid") or ""))
