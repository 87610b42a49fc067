"""ModelRollout.spec.candidatePatch: one edit per upgrade, the candidate made from the incumbent.

The patch's digest names what the operator generates (the candidate's Deployment and Service), so
a changed patch is a new candidate and a new rollout; the names are pure functions of the spec.
"""

import hashlib
import json
import re
from enum import StrEnum
from typing import Annotated, Self

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from modelgate.api.errors import FieldPathError
from modelgate.api.fields import ENV_NAME_PATTERN, METRIC_NAME_PATTERN, ModelName
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.specmodel import SpecModel

# A container's name (an RFC 1123 label) and an env var's, as Kubernetes validates them.
ContainerName = Annotated[str, StringConstraints(max_length=63, pattern=METRIC_NAME_PATTERN)]
EnvName = Annotated[str, StringConstraints(max_length=253, pattern=ENV_NAME_PATTERN)]
# An image reference, as check_job.py takes one: the registry decides what exists.
Image = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
Argument = Annotated[str, StringConstraints(max_length=4096), Field(description="One argument.")]

NOTHING_PATCHED = "set at least one of image, args, env or model"
DIGEST_LENGTH = 10
# Short enough that the ReplicaSet's and Pods' names keep the whole Deployment name (a Pod's name is
# <deployment>-<replicaset hash>-<5 characters>, cut at 63), so the default podRegex finds them.
GENERATED_NAME_LENGTH = 47
GENERATED_PREFIX = "mg-"  # when the incumbent's name does not start with a letter (a Service's must)


class AfterPromotion(StrEnum):
    """What happens once the candidate made from the patch has been promoted (phase Succeeded)."""

    PROMOTE_INTO_INCUMBENT = "PromoteIntoIncumbent"
    RETIRE_INCUMBENT = "RetireIncumbent"


class PatchedEnvVar(SpecModel):
    """One environment variable the candidate's container gets (set, or replaced by name)."""

    name: EnvName = Field(description="The variable's name.")
    value: Annotated[str, StringConstraints(max_length=32768)] = Field(description="Its literal value.")


class CandidatePatch(SpecModel):
    """What differs between the incumbent and the candidate the operator makes from it."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "has(self.image) || has(self.args) || has(self.env) || has(self.model)",
                message=NOTHING_PATCHED,
            ),
            CelRule(
                "!has(self.env) || self.env.all(e, self.env.exists_one(o, o.name == e.name))",
                field_path=".env",
                message="must not name a variable twice",
            ),
        )
    )

    container: ContainerName | None = Field(
        None,
        description="The container of the incumbent's Pod template that the patch changes "
        "(default: the first).",
    )
    image: Image | None = Field(None, description="The candidate container's image.")
    args: Annotated[tuple[Argument, ...], Field(max_length=128)] | None = Field(
        None, description="The candidate container's args, replacing the incumbent's whole."
    )
    env: Annotated[tuple[PatchedEnvVar, ...], Field(max_length=64)] | None = Field(
        None, description="Environment variables set on the candidate container (others are kept)."
    )
    model: ModelName | None = Field(
        None,
        description="The model the candidate's server is started with: the value of its container's "
        "`--model` argument (replaced, or appended when absent), and the model name its requests are "
        "reported under (spec.candidate.model).",
    )
    after_promotion: AfterPromotion = Field(
        AfterPromotion.PROMOTE_INTO_INCUMBENT,
        description="Once promoted: PromoteIntoIncumbent applies the patch to the incumbent's Pod "
        "template, returns the traffic to it once it is Available again and deletes what the operator "
        "generated (the next edit starts from the incumbent); RetireIncumbent keeps the candidate "
        "(released from the rollout, so deleting the rollout leaves it serving) and scales the "
        "incumbent to 0 replicas without deleting it (docs/topologies/one-edit.md).",
    )

    @model_validator(mode="after")
    def _patches_something(self) -> Self:
        if (self.image, self.args, self.env, self.model) == (None, None, None, None):
            raise ValueError(NOTHING_PATCHED)
        names = [variable.name for variable in self.env or ()]
        if len(set(names)) != len(names):
            raise FieldPathError("env", "must not name a variable twice")
        return self

    @property
    def digest(self) -> str:
        """A hash of what the candidate differs by (not of afterPromotion): its names' suffix."""
        changed = self.model_dump(mode="json", by_alias=True, exclude={"after_promotion"})
        encoded = json.dumps(changed, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(encoded).hexdigest()[:DIGEST_LENGTH]


def generated_name(incumbent: str, patch: CandidatePatch) -> str:
    """The name of the candidate Deployment and Service made from `incumbent` by `patch`: a DNS-1035
    label (what a Service's name must be) of at most GENERATED_NAME_LENGTH characters."""
    base = re.sub(r"[^a-z0-9-]", "-", incumbent)
    if not base[:1].isalpha():
        base = GENERATED_PREFIX + base
    base = base[: GENERATED_NAME_LENGTH - DIGEST_LENGTH - 1].rstrip("-")
    return f"{base}-{patch.digest}"
