"""One metric's verdict in one evaluation, with what decided it."""

from __future__ import annotations

from dataclasses import dataclass

from modelgate.api import BreachRule, ConfidenceBounds, QuantileBounds, Verdict


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    message: str
    broken: BreachRule | None = None  # with a Fail: the rule the value broke
    bound: float | None = None  # and its effective bound, where it has one
    bounds: ConfidenceBounds | None = None  # decided on counts: the interval and evidence
    quantile_bounds: QuantileBounds | None = None  # decided on histogram counts: each side's bounds
