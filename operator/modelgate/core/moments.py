"""A moment as messages show it: to the second, in UTC and saying so (a message is read in other
time zones, and days later), never with microseconds or an offset to decode."""

from __future__ import annotations

from datetime import UTC, datetime


def moment(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
