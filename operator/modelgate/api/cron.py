"""Cron schedules, pure: the admission pattern, the parse, and the next time a schedule fires.

Cron schedules (five fields, as a CronJob's, or a macro such as @hourly), pure: the pattern the
CRD checks at admission, the parse that names what is wrong, and the next time a schedule fires.

Times are UTC. Fields: minute hour day-of-month month day-of-week (0 or 7 is Sunday); each is `*`,
a number, a range `a-b`, any of these with a step `/n`, or a comma-separated list of them. As in
cron, when both day fields are restricted a day matching either fires.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# (name, lowest, highest, the values' pattern: admission refuses a number out of range)
FIELDS = (
    ("minute", 0, 59, "[0-5]?[0-9]"),
    ("hour", 0, 23, "[01]?[0-9]|2[0-3]"),
    ("day-of-month", 1, 31, "0?[1-9]|[12][0-9]|3[01]"),
    ("month", 1, 12, "0?[1-9]|1[0-2]"),
    ("day-of-week", 0, 7, "[0-7]"),
)
# Past this, a schedule that matches no day (February 30th) is refused rather than searched forever.
SEARCH_DAYS = 366 * 5


def _field_pattern(values: str) -> str:
    item = f"([*]|({values})(-({values}))?)(/[0-9]{{1,2}})?"
    return f"{item}(,{item})*"


SCHEDULE_PATTERN = (
    "^("
    + "|".join(re.escape(m) for m in MACROS)
    + "|"
    + " +".join(_field_pattern(values) for *_, values in FIELDS)
    + ")$"
)
SCHEDULE_HELP = (
    "expected five cron fields (minute hour day-of-month month day-of-week, each *, a number, a "
    "range a-b, a step /n or a comma list, within the field's range) or a macro (@hourly, @daily, "
    "@weekly, @monthly, @yearly)"
)


@dataclass(frozen=True)
class Schedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 is Sunday
    any_day: bool  # day-of-month is *
    any_weekday: bool  # day-of-week is *

    def _day_matches(self, moment: datetime) -> bool:
        weekday = (moment.weekday() + 1) % 7
        by_day, by_weekday = moment.day in self.days, weekday in self.weekdays
        if self.any_day or self.any_weekday:
            return by_day and by_weekday
        return by_day or by_weekday

    def next_after(self, moment: datetime) -> datetime:
        """The first time after `moment` (to the minute) the schedule fires."""
        start = moment.replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = start.replace(hour=0, minute=0)
        for offset in range(SEARCH_DAYS):
            candidate = day + timedelta(days=offset)
            if candidate.month not in self.months or not self._day_matches(candidate):
                continue
            for hour in sorted(self.hours):
                for minute in sorted(self.minutes):
                    fires = candidate.replace(hour=hour, minute=minute)
                    if fires >= start:
                        return fires
        raise ValueError("the schedule fires on no day (e.g. February 30th)")


def _values(text: str, name: str, low: int, high: int) -> tuple[frozenset[int], bool]:
    chosen: set[int] = set()
    for item in text.split(","):
        span, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ValueError(f"{name}: step {step_text!r} must be at least 1")
        if span == "*":
            first, last = low, high
        else:
            first_text, _, last_text = span.partition("-")
            first = int(first_text)
            last = int(last_text) if last_text else (high if step_text else first)
        if not low <= first <= last <= high:
            raise ValueError(f"{name}: {item!r} must lie within {low}-{high}, the lower end first")
        chosen.update(range(first, last + 1, step))
    return frozenset(chosen), text == "*"


def parse_schedule(text: str) -> Schedule:
    """The schedule, or a ValueError saying what is wrong (SCHEDULE_HELP)."""
    expanded = MACROS.get(text.strip(), text)
    if not re.fullmatch(SCHEDULE_PATTERN, expanded):
        raise ValueError(f"{text!r}: {SCHEDULE_HELP}")
    parts = expanded.split()
    parsed = [
        _values(part, name, low, high) for part, (name, low, high, _) in zip(parts, FIELDS, strict=True)
    ]
    weekdays = frozenset(day % 7 for day in parsed[4][0])
    schedule = Schedule(
        minutes=parsed[0][0],
        hours=parsed[1][0],
        days=parsed[2][0],
        months=parsed[3][0],
        weekdays=weekdays,
        any_day=parsed[2][1],
        any_weekday=parsed[4][1],
    )
    schedule.next_after(datetime(2000, 1, 1))
    return schedule
