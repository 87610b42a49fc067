"""The lower confidence bound of a blind pairwise win rate, ties counted as half a win."""

from __future__ import annotations

import math
from statistics import NormalDist


def win_share(wins: int, ties: int, losses: int) -> float:
    total = wins + ties + losses
    if total == 0:
        raise ValueError("a win rate needs at least one comparison")
    return (wins + ties / 2) / total


def wilson_lower_bound(wins: int, ties: int, losses: int, confidence: float) -> float:
    """Wilson's score interval's lower end for the share of wins, at a two-sided `confidence`: unlike
    the normal approximation it stays inside [0, 1] and is honest at small samples."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = wins + ties + losses
    share = win_share(wins, ties, losses)
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    centre = share + z * z / (2 * n)
    margin = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z * z / n))
