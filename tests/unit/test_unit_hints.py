"""A number written with its unit is refused by parse_spec in one sentence naming the field, the
unit the field is in and, where the text reads as an amount of that unit, the number to write."""

from __future__ import annotations

from typing import Any

import pytest

from modelgate.api import InvalidSpecError, parse_spec
from tests.support.bad_rollouts import valid_rollout

LATENCY = 1  # spec.analysis.metrics[1] of valid_rollout: latencyP99
RATE = 0  # errorRate


def problems_after(edit: dict[str, Any], index: int) -> tuple[str, ...]:
    spec = valid_rollout("serving")["spec"]
    spec["analysis"]["metrics"][index] |= edit
    with pytest.raises(InvalidSpecError) as refused:
        parse_spec(spec)
    return refused.value.problems


@pytest.mark.parametrize(
    ("edit", "index", "field", "number"),
    [
        ({"max": "250ms"}, LATENCY, "max", "0.25"),
        ({"max": "2s"}, LATENCY, "max", "2"),
        ({"min": "1m30s"}, LATENCY, "min", "90"),
        ({"max": "1%"}, RATE, "max", "0.01"),
        ({"max": "0.5%"}, RATE, "max", "0.005"),
        (
            {"name": "slow", "preset": "slowRequestRate", "max": 0.1, "threshold": "500ms"},
            RATE,
            "threshold",
            "0.5",
        ),
        (
            {
                "name": "goodput",
                "preset": "goodputPerAccelerator",
                "goodput": {"ttft": "300ms", "tpot": 0.05},
            },
            RATE,
            "goodput.ttft",
            "0.3",
        ),
    ],
)
def test_a_number_with_its_unit_gets_the_number_to_write(
    edit: dict[str, Any], index: int, field: str, number: str
) -> None:
    (problem,) = problems_after(edit, index)
    assert problem.startswith(f"spec.analysis.metrics[{index}].{field}: "), problem
    assert problem.endswith(f"so write {number}"), problem


@pytest.mark.parametrize(("edit", "index"), [({"max": "fast"}, LATENCY), ({"max": "low"}, RATE)])
def test_text_that_reads_as_no_amount_gets_an_example_of_the_unit(edit: dict[str, Any], index: int) -> None:
    (problem,) = problems_after(edit, index)
    assert problem.startswith(f"spec.analysis.metrics[{index}].max: "), problem
    assert "such as" in problem and ("seconds" in problem or "[0, 1]" in problem), problem


def test_a_query_metric_bound_as_text_is_refused_without_a_unit() -> None:
    (problem,) = problems_after({"name": "q", "preset": None, "query": "up", "max": "10"}, RATE)
    assert problem.startswith("spec.analysis.metrics[0].max: "), problem
    assert "seconds" not in problem and "[0, 1]" not in problem, problem
