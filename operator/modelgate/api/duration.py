"""Go-style durations ("30s", "5m", "1h30m", "500ms"), the subset the CRD's pattern accepts."""

import re
from datetime import timedelta

DURATION_PATTERN = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
# A hundred years. Longer ones mean nothing to a rollout, and timestamps plus a duration near
# timedelta's own limit overflow datetime, which would fail every tick of the rollout.
MAX_DURATION_TEXT = "876000h"
MAX_DURATION = timedelta(hours=876000)

_DURATION = re.compile(DURATION_PATTERN)
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_TIMEDELTA_UNITS = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours"}


def parse_duration(text: str) -> timedelta:
    """Parse a Go-style duration such as "1h30m", at most MAX_DURATION; raise ValueError otherwise."""
    if not _DURATION.fullmatch(text):
        raise ValueError(f"invalid duration {text!r}: use a Go-style one such as 30s, 5m, 1h30m or 500ms")
    try:
        duration = sum(
            (timedelta(**{_TIMEDELTA_UNITS[unit]: float(number)}) for number, unit in _PART.findall(text)),
            timedelta(),
        )
    except OverflowError:
        duration = None
    if duration is None or duration > MAX_DURATION:
        raise ValueError(f"invalid duration {text!r}: must be at most {MAX_DURATION_TEXT} (100 years)")
    return duration
