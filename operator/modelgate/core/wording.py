"""A count with its noun in the number it takes ("1 breach", "2 breaches"): messages never say
"breach(es)"."""

from __future__ import annotations


def how_many(count: float, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, plural unless the count is 1; `plural` where adding "s" is wrong."""
    shown = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{shown} {noun if count == 1 else plural or noun + 's'}"
