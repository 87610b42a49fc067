"""ModelRollout.spec.rollback: what Prometheus errors lead to, how a rollback steps down, and what
deleting the rollout does to the route."""

from typing import Annotated, Literal

from pydantic import Field

from modelgate.api.bounds import COUNT_MAX
from modelgate.api.fields import Integer
from modelgate.api.safety import GradualRollback, OnDelete
from modelgate.api.specmodel import SpecModel

OnPrometheusError = Literal["pause", "rollback"]


class RollbackSpec(SpecModel):
    on_prometheus_error: OnPrometheusError = Field(
        "pause",
        description="After maxConsecutiveErrors failed evaluations in a row, pause (keep the weight and "
        "wait for `modelgate resume`) or roll back.",
    )
    max_consecutive_errors: Annotated[Integer, Field(ge=1, le=COUNT_MAX)] = Field(
        3, description="Evaluations in a row with a Prometheus error before onPrometheusError applies."
    )
    gradual: GradualRollback | None = Field(
        None,
        description="Step the candidate's weight down to 0 over a duration instead of at once, for "
        "incumbents that need to warm their caches. Without it every rollback is immediate.",
    )
    on_delete: OnDelete = Field(
        "Leave",
        description="What deleting the ModelRollout does to the route: Leave it as it is, or "
        "ReturnTraffic: set the candidate's weight to 0 first (the operator keeps a finalizer on the "
        "rollout for that, until it succeeds or is rolled back to 0).",
    )
