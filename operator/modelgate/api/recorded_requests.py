"""A gate check's replay of the newest requests a refusal proxy recorded (the `replay.recorded` of
api/gate.py)."""

from typing import Annotated

from pydantic import Field

from modelgate.api.fields import Integer
from modelgate.api.object_storage import S3Location
from modelgate.api.specmodel import SpecModel

ONE_REPLAY_SOURCE = "set exactly one of configMap, url, persistentVolumeClaim, s3 or recorded"
RECORDED_NOT_SAMPLED = "sample does not apply to recorded (every one of the newest recorded.last is replayed)"


class RecordedRequests(SpecModel):
    """The newest requests a refusal proxy recorded (`modelgate refusal-proxy --record`,
    docs/refusal-sidecar.md), replayed every one, oldest first."""

    s3: S3Location = Field(
        description="The prefix the proxy records into (its --record s3://bucket/prefix) and the Secret "
        "that reads it."
    )
    last: Annotated[Integer, Field(ge=1, le=100000)] = Field(
        1000, description="How many of the newest recorded requests to replay."
    )
