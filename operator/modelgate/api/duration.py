"""Go-style durations ("30s", "5m", "1h30m", "500ms"), the subset the CRD's pattern accepts."""

import re
from datetime import timedelta

DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"

_DURATION = re.compile(DURATION_PATTERN)
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_TIMEDELTA_UNITS = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours"}


def parse_duration(text: str) -> timedelta:
    """Parse a Go-style duration such as "1h30m"; raise ValueError when it is not one."""
    if not _DURATION.fullmatch(text):
        raise ValueError(f"invalid duration {text!r}: use a Go-style one such as 30s, 5m, 1h30m or 500ms")
    try:
        return sum(
            (timedelta(**{_TIMEDELTA_UNITS[unit]: float(number)}) for number, unit in _PART.findall(text)),
            timedelta(),
        )
    except OverflowError:
        raise ValueError(f"invalid duration {text!r}: too long") from None
