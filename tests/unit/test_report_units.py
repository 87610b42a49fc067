"""The report writes each metric's section in one unit: the heading's, the chart's and the rule's
bounds alike (an error rate's 2% bound is not written 0.02 beside a chart in percent); factors of the
incumbent ("1.5 x incumbent") and a test's alpha are not amounts and carry none."""

from __future__ import annotations

import re
from typing import Any

import pytest

from modelgate.api import ModelRolloutStatus, parse_spec
from modelgate.cli.report.timeline import metric_traces
from modelgate.cli.report.units import suffix
from testbed.manifests import model_rollout

METRICS = [
    {"name": "errors", "preset": "errorRate", "max": 0.02, "compare": {"maxIncrease": 0.005}},
    {"name": "p99", "preset": "latencyP99", "max": 1.5, "compare": {"maxRatio": 1.2}},
    {"name": "own", "query": "sum(up)", "min": 3},
]
# A number in a rule and what follows it: its unit, if any.
AMOUNT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?(?:e-?\d+)?)(%| s\b| x incumbent)?")


def traces() -> dict[str, Any]:
    body = model_rollout(
        "chat", "ml", steps=[{"setWeight": 20}], prometheus="http://prometheus:9090", metrics=METRICS
    )
    ranges = {m["name"]: ("up", (), (), None) for m in METRICS}
    found = metric_traces(parse_spec(body["spec"]), body["spec"], ModelRolloutStatus(), ranges)
    return {trace.name: trace for trace in found}


@pytest.mark.parametrize(("name", "unit", "bounds"), [("errors", "%", 2), ("p99", " s", 1), ("own", "", 1)])
def test_every_bound_of_a_rule_is_written_in_its_sections_unit(name: str, unit: str, bounds: int) -> None:
    trace = traces()[name]
    assert suffix(trace.unit).strip() == unit.strip()  # the heading's and the chart's unit
    amounts = [(number, end or "") for number, end in AMOUNT.findall(trace.rule) if end != " x incumbent"]
    assert len(amounts) == bounds, trace.rule
    assert all(end == unit for _, end in amounts), trace.rule


def test_an_error_rates_bounds_are_percent() -> None:
    assert traces()["errors"].rule == "<= 2% and <= incumbent + 0.5%"
