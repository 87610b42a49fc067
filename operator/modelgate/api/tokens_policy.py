"""A gate check's bounds on the candidate's output tokens per task against the incumbent's.

A gate check's bounds on tokens per task: how many output tokens an answer of the candidate may
take against the incumbent's (core/gate_judgement.py judges them; docs/gate.md, "Tokens per task")."""

from typing import Annotated

from pydantic import Field

from modelgate.api.fields import MetricName, Number
from modelgate.api.markers import CelRule, cel_rules
from modelgate.api.specmodel import SpecModel

# A ratio of tokens per task, candidate over incumbent: 1.5 lets the candidate use half as many more.
MIN_TOKENS_RATIO = 0.01
# The rule beside `minimum`: the API server compares an integer value with a fractional minimum
# truncated (0 passes `minimum: 0.01`), CEL compares them as numbers.
TokensRatio = Annotated[
    Number,
    Field(
        ge=MIN_TOKENS_RATIO,
        le=100,
        json_schema_extra=cel_rules(
            CelRule(f"self >= {MIN_TOKENS_RATIO}", message=f"must be at least {MIN_TOKENS_RATIO}")
        ),
    ),
]


class CapabilityTokensRatio(SpecModel):
    """The most output tokens per task one capability's answers may take, against the incumbent's."""

    name: MetricName = Field(description="A capability tag of the test set.")
    max: TokensRatio = Field(
        description="The candidate's mean output tokens per item of this capability may be at most this "
        "multiple of the incumbent's on the same items."
    )
