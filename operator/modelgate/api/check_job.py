"""A check's own container (spec.gate.checks[].job) and the resources of a check's container."""

from typing import Annotated

from pydantic import Field, StringConstraints

from modelgate.api.fields import ENV_NAME_PATTERN, Quantity
from modelgate.api.markers import list_map
from modelgate.api.specmodel import SpecModel

EnvName = Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=ENV_NAME_PATTERN)]
Argument = Annotated[
    str, StringConstraints(max_length=4096), Field(description="One word of the command line.")
]


class EnvVar(SpecModel):
    """One environment variable of a check's container."""

    name: EnvName = Field(description="The variable's name.")
    value: Annotated[str, StringConstraints(max_length=32768)] = Field(
        "", description="The variable's value."
    )


class CheckJob(SpecModel):
    """A check of your own: a container that ends by writing a GateResult JSON (docs/gate.md) to
    /dev/termination-log, and exits 0 when it measured. It runs only where the operator allows
    custom images (the chart's gate.customImages), as a non-root user without an API token."""

    image: Annotated[str, StringConstraints(min_length=1, max_length=1024)] = Field(
        description="The container image."
    )
    command: Annotated[tuple[Argument, ...], Field(max_length=64)] = Field(
        (), description="The entrypoint; the image's own when empty."
    )
    args: Annotated[tuple[Argument, ...], Field(max_length=256)] = Field(
        (), description="Arguments to the entrypoint."
    )
    env: Annotated[tuple[EnvVar, ...], Field(max_length=64)] = Field(
        (), description="Environment variables of the container.", json_schema_extra=list_map("name")
    )


class ComputeAmounts(SpecModel):
    cpu: Quantity | None = Field(None, description="CPU, e.g. 500m or 2.")
    memory: Quantity | None = Field(None, description="Memory, e.g. 512Mi or 4Gi.")


class CheckResources(SpecModel):
    """The check container's requests and limits. The operator fills what is unset from its defaults
    and refuses a value over its maximum (the chart's gate.checkResources), naming the field."""

    requests: ComputeAmounts = Field(ComputeAmounts(), description="What the container is guaranteed.")
    limits: ComputeAmounts = Field(ComputeAmounts(), description="The most the container may use.")
