"""The bounds of the API's numbers that many fields share, each with its reason.

The bounds of the API's numbers that many fields share, each with its reason: every number in the
CRDs has a maximum and a minimum the API server enforces (issue 34: a pricePerHour of 1e308 was
admitted, overflowed the cost to infinity and failed every tick of the rollout)."""

import sys
from typing import Annotated

from pydantic import AllowInfNan, Field

from modelgate.api.fields import Number
from modelgate.api.markers import CelRule

# What the operator measured or computed from a measurement (a query's value, a counter's total, a
# score) has no bound of its own but that it is finite: JSON has no infinity, nor the API server.
FINITE_MAX = sys.float_info.max
# A count the operator keeps in status (failures, samples, a sequence) and a generation: the largest
# integer a float64 holds exactly. The API server reads a schema's bounds as float64 (int64's maximum
# is not one: it refused the CRD), and JSON clients such as JavaScript's keep integers exact up to it.
EXACT_INT_MAX = 2**53 - 1
# A metric's bounds (max, min, threshold, an increase) and a gate score's: any unit a query or a check
# returns (a petabyte in bytes is 1e15), and far enough from overflow that the operator's sums and
# products of two bounds stay finite.
METRIC_BOUND = 1e15
# A ratio of the candidate's value to the incumbent's (compare.maxRatio, minRatio): six orders of
# magnitude either way.
RATIO_MAX = 1e6
# How many of something in a row a rule waits for (failureLimit, maxConsecutiveErrors): a million
# analysis intervals of 1 s are over eleven days.
COUNT_MAX = 1_000_000

# A latency target or bound, in seconds (goodput's ttft and tpot, slowRequestRate's threshold): a
# day, longer than any histogram bucket of the presets' sources.
LATENCY_MAX = 86_400.0

MetricBound = Annotated[Number, Field(ge=-METRIC_BOUND, le=METRIC_BOUND)]
Measured = Annotated[float, AllowInfNan(False), Field(ge=-FINITE_MAX, le=FINITE_MAX)]
MeasuredAmount = Annotated[float, AllowInfNan(False), Field(ge=0, le=FINITE_MAX)]
Counted = Annotated[int, Field(ge=0, le=EXACT_INT_MAX)]


def nonzero(field: str, message: str, *, optional: bool = False) -> CelRule:
    """The CEL half of `> 0` on a field whose schema minimum is 0: zero is all that is left to
    refuse, so that a negative value gets the minimum's sentence alone rather than two."""
    rule = f"self.{field} != 0.0"
    return CelRule(
        f"!has(self.{field}) || {rule}" if optional else rule, field_path=f".{field}", message=message
    )
