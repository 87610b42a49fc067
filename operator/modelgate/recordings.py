"""The names of the objects the refusal proxy records into, and which are the newest.

Where the refusal proxy's recorded requests are kept and which are the newest: the names of the
objects it writes under a prefix, shared by the proxy (which writes them) and the evaluator (which
replays the newest N). Pure.

An object holds a batch of records (JSONL in the replay format, each with `recordedAt`) and is named
`<time of its newest record>-<source>-<sequence>.jsonl`, the time as `20261205T053012.123456Z`: names
sort by time, and no record of an object is newer than its name says."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime

RECORDED_AT = "recordedAt"
SUFFIX = ".jsonl"
_TIME_FORMAT = "%Y%m%dT%H%M%S.%fZ"
_NAME = re.compile(r"^(?P<time>\d{8}T\d{6}\.\d{6}Z)-(?P<source>[A-Za-z0-9._-]+)-(?P<sequence>\d+)\.jsonl$")
# A source names the writer (the Pod) within an object's name.
_SOURCE_CHARACTERS = re.compile(r"[^A-Za-z0-9._-]")


def object_name(newest: datetime, source: str, sequence: int) -> str:
    source = _SOURCE_CHARACTERS.sub("-", source)[:63] or "proxy"
    return f"{newest.astimezone(UTC).strftime(_TIME_FORMAT)}-{source}-{sequence:08d}{SUFFIX}"


def newest_time(name: str) -> datetime | None:
    """The time in an object's name (its last path segment), or None for names not written so."""
    match = _NAME.match(name.rsplit("/", 1)[-1])
    if match is None:
        return None
    return datetime.strptime(match["time"], _TIME_FORMAT).replace(tzinfo=UTC)


def newest_first(names: Iterable[str]) -> list[tuple[str, datetime]]:
    """The recording objects among `names` with their times, newest first; other names are left out."""
    timed = [(name, time) for name in names if (time := newest_time(name)) is not None]
    return sorted(timed, key=lambda pair: (pair[1], pair[0]), reverse=True)


def format_time(moment: datetime) -> str:
    """ISO 8601 in UTC with microseconds always: the texts sort as the times do."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
