"""status.cost from one analysis run: each side's cost per million output tokens over the window,
accelerators x price per hour x window hours / (output tokens / 1e6). Pure arithmetic over what the
run read; a side without tokens or accelerators has no cost, never a division by zero, nor one
whose cost has no finite value."""

from __future__ import annotations

import math

from modelgate.api import AnalysisSpec
from modelgate.api.accelerators import SideAccelerators
from modelgate.api.cost_status import CostStatus, SideCost
from modelgate.core.results import AnalysisRun, QueryResult

SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 1e6


def cost_status(analysis: AnalysisSpec, run: AnalysisRun) -> CostStatus | None:
    """None unless both sides have a price and the run read their tokens and accelerators."""
    priced = analysis.accelerators
    if not analysis.priced or priced is None or run.output_tokens is None or run.accelerators is None:
        return None
    if run.window is None:
        return None
    seconds = run.window.total_seconds()
    candidate, incumbent = run.output_tokens
    return CostStatus(
        time=run.at,
        window_seconds=seconds,
        candidate=_side(priced.candidate, run.accelerators.candidate, candidate, seconds),
        incumbent=_side(priced.incumbent, run.accelerators.incumbent, incumbent, seconds),
    )


def _side(priced: SideAccelerators, accelerators: float, tokens: QueryResult, seconds: float) -> SideCost:
    assert priced.price_per_hour is not None
    grown = (
        tokens.value
        if tokens.value is not None and math.isfinite(tokens.value) and tokens.value > 0
        else None
    )
    cost = None
    if grown is not None and accelerators > 0:
        hours = seconds / SECONDS_PER_HOUR
        # Multiplied before dividing: a million tokens divided first underflows to 0 for a count as
        # small as 5e-324. What has no finite value (too few tokens for the price) is no cost.
        spent = accelerators * priced.price_per_hour * hours * TOKENS_PER_MILLION / grown
        cost = spent if math.isfinite(spent) else None
    return SideCost(
        accelerators=accelerators,
        price_per_hour=priced.price_per_hour,
        output_tokens=grown,
        cost_per_million_tokens=cost,
    )
