"""spec.trafficRouting.inferenceModelRewrite: the InferenceModelRewrite rule to move.

ModelRollout.spec.trafficRouting.inferenceModelRewrite: the rule of llm-d's InferenceModelRewrite
(llm-d.ai/v1alpha2) whose targets carry the two adapters' weights. The spec names no API group: the
Inference Extension's inference.networking.x-k8s.io one (removed in its v1.6.0) is refused when the
operator finds an object of it under this name (routers/model_rewrite.py)."""

from typing import Annotated

from pydantic import Field

from modelgate.api.fields import Integer, ObjectName
from modelgate.api.specmodel import SpecModel

# Far more rules than an InferenceModelRewrite of one model's adapters holds.
MAX_REWRITE_RULE = 1023


class InferenceModelRewriteRouting(SpecModel):
    name: ObjectName = Field(
        description="Name of llm-d's InferenceModelRewrite (llm-d.ai/v1alpha2, in the ModelRollout's "
        "namespace) whose rule rewrites requests to the incumbent's and the candidate's adapter "
        "(spec.*.adapter). One of the Inference Extension's removed inference.networking.x-k8s.io "
        "group is refused, naming its replacement."
    )
    rule_index: Annotated[Integer, Field(ge=0, le=MAX_REWRITE_RULE)] = Field(
        0,
        description="Index of the rule whose targets are the two adapters. The rule's targets must be "
        "those two only; a target at weight 0 is removed, as the API allows no weight 0.",
    )
