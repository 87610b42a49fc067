"""How the report writes a metric's values: in its preset's unit, to 3 significant digits.

How the report writes a metric's values: in its preset's unit (a share as %, seconds as s),
rounded to 3 significant digits, and its y axis ticked at round numbers."""

from __future__ import annotations

import math

from modelgate.metrics.presets import get_preset
from modelgate.metrics.presets.catalog import UnknownPresetError

# A preset's unit -> what the report writes after a value, and the factor that turns it so.
_SHOWN = {"ratio": ("%", 100.0), "seconds": ("s", 1.0), "tokens/s": ("tokens/s", 1.0)}
# Shares and rates cannot go below 0: the axis does not either.
NON_NEGATIVE = ("ratio", "seconds", "tokens/s", "requests", "req/s")


def preset_unit(preset: str | None) -> str:
    """The preset's unit ("ratio", "seconds", ...), or "" for a query of the user's own."""
    if preset is None:
        return ""
    try:
        return get_preset(preset).unit
    except UnknownPresetError:
        return ""


def suffix(unit: str) -> str:
    return _SHOWN.get(unit, (unit, 1.0))[0]


def scaled(value: float, unit: str) -> float:
    return value * _SHOWN.get(unit, ("", 1.0))[1]


def shown(value: float | None, unit: str = "") -> str:
    """`0.051275` as a ratio -> "5.13%"; 2.5 seconds -> "2.5 s"; None -> "no value"."""
    if value is None:
        return "no value"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = f"{scaled(value, unit):.3g}"
    end = suffix(unit)
    return f"{text}{end}" if end == "%" else f"{text} {end}".rstrip()
