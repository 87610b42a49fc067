"""status.internalError: the exception that failed the rollout when its ticks kept raising it.

status.internalError: the exception that failed the rollout when its ticks kept raising it (a bug
in the operator, issue 34), for `modelgate status` and for the bug report."""

from typing import Annotated

from pydantic import Field, StringConstraints

from modelgate.api.statusmodel import StatusModel, Timestamp


class InternalError(StatusModel):
    """A tick raised an exception the operator does not expect, twice in a row: the rollout was failed
    and its candidate's traffic returned to the incumbent."""

    time: Timestamp = Field(description="When the rollout was failed for it.")
    type: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(
        description="The exception's type, e.g. OverflowError."
    )
    message: Annotated[str, StringConstraints(max_length=1024)] = Field(
        description="The exception's message."
    )
