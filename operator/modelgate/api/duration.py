"""Go-style durations ("30s", "5m", "1h30m", "500ms"), the subset the CRD's CEL rule accepts: each unit
at most once, the largest first. DURATION_PATTERN is the one definition: parse_duration matches it with
`re`, the API server with RE2 (tests/cluster/test_readable_refusals.py checks they agree)."""

import functools
import re
from datetime import timedelta


def _largest_first(*parts: str) -> str:
    """One or more of `parts` (each a unit's number and unit), in their order: the first present one,
    then any of those after it."""
    forms = (
        "".join([part, *(f"({later})?" for later in parts[index + 1 :])]) for index, part in enumerate(parts)
    )
    return "^(" + "|".join(forms) + ")$"


_FRACTION = "([.][0-9]+)?"
DURATION_PATTERN = _largest_first(*(f"[0-9]+{_FRACTION}{unit}" for unit in ("h", "m", "s", "ms")))
# The well-formed durations whose every part fits in these digits: below 1.8 million hours, all of
# them within Go's limit (about 2.56 million hours), so the CRD's CEL can convert them with
# duration(), which fails to evaluate beyond it (a "type conversion error" naming no bound).
WITHIN_GO_RANGE_PATTERN = _largest_first(
    *(f"[0-9]{{1,{digits}}}{_FRACTION}{unit}" for digits, unit in ((6, "h"), (7, "m"), (9, "s"), (12, "ms")))
)
# A hundred years. Longer ones mean nothing to a rollout, and timestamps plus a duration near
# timedelta's own limit overflow datetime, which would fail every tick of the rollout.
MAX_DURATION_TEXT = "876000h"
MAX_DURATION = timedelta(hours=876000)

# What follows a malformed value, quoted, in the API server's refusal and in parse_duration's: one
# sentence with examples, rather than the pattern.
NOT_A_DURATION = (
    "is not a duration; write a number and a unit (h, m, s or ms), the largest unit first, "
    "such as 30s, 5m or 1h30m"
)

_DURATION = re.compile(DURATION_PATTERN)
_WITHIN_GO_RANGE = re.compile(WITHIN_GO_RANGE_PATTERN)
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_TIMEDELTA_UNITS = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "h": "hours"}


@functools.lru_cache(maxsize=1024)  # the engine reads the same few durations at every tick
def parse_duration(text: str) -> timedelta:
    """Parse a Go-style duration such as "1h30m", at most MAX_DURATION; raise ValueError otherwise."""
    if not _DURATION.fullmatch(text):
        raise ValueError(f'"{text}" {NOT_A_DURATION}')
    too_long = f'"{text}" must be at most {MAX_DURATION_TEXT} (100 years)'
    if not _WITHIN_GO_RANGE.fullmatch(text):
        raise ValueError(too_long)
    duration = sum(
        (timedelta(**{_TIMEDELTA_UNITS[unit]: float(number)}) for number, unit in _PART.findall(text)),
        timedelta(),
    )
    if duration > MAX_DURATION:
        raise ValueError(too_long)
    return duration
