"""status.cost in words, for `modelgate status` and the report: each side's cost per million output
tokens and what it is made of."""

from __future__ import annotations

from modelgate.api.cost_status import CostStatus, SideCost


def cost_text(cost: CostStatus | None) -> str | None:
    """E.g. "candidate 2.31 (2 accelerators at 2.5/h, 21600 tokens in 60s); incumbent 1.16 (...);
    candidate/incumbent 1.99"; None without status.cost."""
    if cost is None:
        return None
    window = f"{cost.window_seconds:g}s"
    sides = [
        f"{name} {_side(side, window)}"
        for name, side in (("candidate", cost.candidate), ("incumbent", cost.incumbent))
    ]
    candidate, incumbent = cost.candidate.cost_per_million_tokens, cost.incumbent.cost_per_million_tokens
    if candidate is not None and incumbent:
        sides.append(f"candidate/incumbent {candidate / incumbent:.3g}")
    return "; ".join(sides)


def _side(side: SideCost, window: str) -> str:
    amount = "none" if side.cost_per_million_tokens is None else f"{side.cost_per_million_tokens:.4g}"
    tokens = "no" if side.output_tokens is None else f"{side.output_tokens:.0f}"
    made_of = f"{side.accelerators:g} accelerators at {side.price_per_hour:g}/h, {tokens} tokens in {window}"
    return f"{amount} ({made_of})"
