"""The engine shortens outside text to the lengths the status schema allows; those lengths must be
the schema's own, or a long Prometheus error would still make a status the API server refuses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError

from modelgate.api import Condition, MetricAnalysis, ModelRolloutStatus, RollbackReason, Verdict
from modelgate.core import reasons
from tests.unit.engine_support import T0


def metric_analysis(**fields: Any) -> object:
    return MetricAnalysis(name="error-rate", verdict=Verdict.PASS, time=T0, **fields)


def rollback_reason(**fields: Any) -> object:
    return RollbackReason(time=T0, **{"message": "m", **fields})


def condition(**fields: Any) -> object:
    return Condition(type="Completed", status="True", reason="Succeeded", last_transition_time=T0, **fields)


def status(**fields: Any) -> object:
    return ModelRolloutStatus(**fields)


@pytest.mark.parametrize(
    ("build", "field", "limit"),
    [
        (metric_analysis, "message", reasons.ANALYSIS_MESSAGE),
        (metric_analysis, "query", reasons.QUERY),
        (rollback_reason, "message", reasons.ANALYSIS_MESSAGE),
        (rollback_reason, "query", reasons.QUERY),
        (status, "message", reasons.STATUS_MESSAGE),
        (condition, "message", reasons.CONDITION_MESSAGE),
    ],
)
def test_limits_are_the_schemas(build: Callable[..., object], field: str, limit: int) -> None:
    build(**{field: "x" * limit})
    with pytest.raises(ValidationError):
        build(**{field: "x" * (limit + 1)})


def test_clip_keeps_short_text_and_marks_cut_text() -> None:
    assert reasons.clip("short", 10) == "short"
    clipped = reasons.clip("x" * 20, 10)
    assert (len(clipped), clipped.endswith("...")) == (10, True)
