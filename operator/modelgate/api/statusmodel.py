"""What every status model shares: the base class, timestamps in UTC, and verdicts."""

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

# Far enough from datetime's own end that a timestamp plus any duration (at most 100 years) fits.
LATEST_TIMESTAMP = datetime(9000, 1, 1, tzinfo=UTC)


def _in_utc(moment: datetime) -> datetime:
    # Aware datetimes only: a naive one would be serialized without an offset, which is not RFC 3339.
    if moment.tzinfo is None:
        raise ValueError("must include a time zone")
    if moment >= LATEST_TIMESTAMP:
        raise ValueError(f"must be before {LATEST_TIMESTAMP.year}")
    return moment.astimezone(UTC)


Timestamp = Annotated[datetime, AfterValidator(_in_utc)]
"""A moment in UTC, serialized as RFC 3339 with a `Z` suffix."""


class Verdict(StrEnum):
    PASS = "Pass"
    FAIL = "Fail"
    INCONCLUSIVE = "Inconclusive"
    ERROR = "Error"


class StatusModel(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel, extra="forbid")
