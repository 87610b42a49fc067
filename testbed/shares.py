"""Deterministic shares: the doubles give an outcome to exactly round(n x rate) of n cases (halves
round up), never by coin flips, so tests can assert exact counts."""

from __future__ import annotations

import math
from fractions import Fraction


def exact_rate(rate: float) -> Fraction:
    """`rate` as a fraction (0.1 is 1/10, not the float just below it), so counts come out exact."""
    return Fraction(rate).limit_denominator(1_000_000)


def rounded_count(n: int, rate: float) -> int:
    """round(n x rate), halves up: how many of n cases a rate picks."""
    return math.floor(n * exact_rate(rate) + Fraction(1, 2))


class EvenSpread:
    """Says yes to exactly round(n * rate) of n calls (halves round up), evenly spread: error
    diffusion, not coin flips."""

    def __init__(self, rate: Fraction) -> None:
        self._rate = rate
        self._credit = Fraction(1, 2)

    def next(self) -> bool:
        self._credit += self._rate
        if self._credit >= 1:
            self._credit -= 1
            return True
        return False
