"""What a number written with its unit should have been ("250ms" on a latency: 0.25).

What a number written with its unit should have been: `max: "250ms"` on a latency is refused
with `"250ms" is not a number; latencies are in seconds, so write 0.25`. The API server cannot say
this (a string where the schema types a number fails its type check before any CEL rule runs, see
docs/api-reference.md); parse_spec, and so `modelgate plan` and the operator, can."""

from collections.abc import Iterable, Mapping
from enum import Enum

from modelgate.api.duration import parse_duration
from modelgate.api.errors import FieldPathError


class Unit(Enum):
    SECONDS = "seconds"
    SHARE = "share"  # of requests, in [0, 1]


def _number(text: str, unit: Unit | None) -> float | None:
    """The number `text` means in `unit`, where it reads as one: "250ms" is 0.25 seconds, "1%" 0.01."""
    try:
        if unit is Unit.SECONDS:
            return parse_duration(text).total_seconds()
        if unit is Unit.SHARE and text.endswith("%"):
            return float(text.removesuffix("%")) / 100
    except ValueError:
        return None
    return None


def not_a_number(text: str, unit: Unit | None) -> str:
    """One sentence for a number given as `text`: in which unit the field is, and what to write."""
    said = f'"{text}" is not a number'
    meant = _number(text, unit)
    if unit is Unit.SECONDS:
        advice = f"so write {meant:g}" if meant is not None else "such as 0.25 for 250ms"
        return f"{said}; latencies are in seconds, {advice}"
    if unit is Unit.SHARE:
        advice = f"so write {meant:g}" if meant is not None else "such as 0.01 for 1%"
        return f"{said}; rates are shares of requests in [0, 1], {advice}"
    return f"{said}; write one without quotes or a unit"


def refuse_text(data: object, fields: Iterable[str], unit_of: Mapping[str, Unit | None]) -> None:
    """Raises naming the first of `fields` of a model's input that holds text in place of a number."""
    if not isinstance(data, Mapping):
        return
    for name in fields:
        value = data.get(name)
        if isinstance(value, str):
            raise FieldPathError(name, not_a_number(value, unit_of.get(name)))
