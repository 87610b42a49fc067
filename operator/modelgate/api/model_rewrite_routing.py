"""spec.trafficRouting.inferenceModelRewrite: the InferenceModelRewrite rule to move.

ModelRollout.spec.trafficRouting.inferenceModelRewrite: the rule of an InferenceModelRewrite
(inference.networking.x-k8s.io/v1alpha2) whose targets carry the two adapters' weights."""

from typing import Annotated

from pydantic import Field

from modelgate.api.fields import Integer, ObjectName
from modelgate.api.specmodel import SpecModel

# Far more rules than an InferenceModelRewrite of one model's adapters holds.
MAX_REWRITE_RULE = 1023


class InferenceModelRewriteRouting(SpecModel):
    name: ObjectName = Field(
        description="Name of the InferenceModelRewrite (in the ModelRollout's namespace) whose rule "
        "rewrites requests to the incumbent's and the candidate's adapter (spec.*.adapter)."
    )
    rule_index: Annotated[Integer, Field(ge=0, le=MAX_REWRITE_RULE)] = Field(
        0,
        description="Index of the rule whose targets are the two adapters. The rule's targets must be "
        "those two only; a target at weight 0 is removed, as the API allows no weight 0.",
    )
