"""`kubectl get modelrollouts` shows a bounded Message: the CRD's column reads status.shortMessage,
written with every status from the message's first line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from modelgate.api import ModelRolloutStatus, Phase, parse_status
from modelgate.api.status import SHORT_MESSAGE

CRD = Path(__file__).resolve().parents[2] / "crds" / "modelrollouts.modelgate.io.yaml"
LONG = "metric error-rate: 0.034 is above the maximum 0.01 " + "x" * 4000


@pytest.mark.parametrize(
    "message",
    [LONG, "waiting for weight 10 to be live\nthe route answered 409 three times", "resumed", "a" * 60],
)
def test_every_written_status_carries_a_bounded_first_line(message: str) -> None:
    patch = ModelRolloutStatus(phase=Phase.PROGRESSING, message=message).to_patch()
    short = patch["shortMessage"]
    assert 0 < len(short) <= SHORT_MESSAGE and "\n" not in short
    assert message.startswith(short.removesuffix("…"))
    assert (short == message) == (len(message) <= SHORT_MESSAGE and "\n" not in message)
    assert parse_status(patch).to_patch() == patch  # read back, it is derived again alike


def test_no_message_no_short_one() -> None:
    assert ModelRolloutStatus().to_patch()["shortMessage"] is None


def test_the_message_column_reads_a_field_the_schema_bounds() -> None:
    version = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]
    (column,) = [c for c in version["additionalPrinterColumns"] if c["name"] == "Message"]
    field: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    for name in column["jsonPath"].removeprefix(".").split("."):
        field = field["properties"][name]
    assert field["maxLength"] <= SHORT_MESSAGE
