"""docs/notifications.md against the model a webhook receiver's JSON is made from: the payload
table names every field, in order, and nothing else; the example is a payload; the transitions and
receiver kinds listed are the enums'."""

from __future__ import annotations

import json
import re

from modelgate.api.notification_payload import NotificationPayload
from modelgate.api.notifications import DEFAULT_TRANSITIONS, Transition
from testbed.versions import REPO_ROOT

PAGE = (REPO_ROOT / "docs" / "notifications.md").read_text()


def section(heading: str) -> str:
    start = PAGE.index(f"## {heading}\n")
    end = PAGE.find("\n## ", start + 1)
    return PAGE[start : end if end != -1 else None]


def table_fields(text: str) -> list[str]:
    return re.findall(r"^\| `([A-Za-z]+)` \|", text, flags=re.MULTILINE)


def test_the_payload_table_is_the_model() -> None:
    aliases = [field.alias or name for name, field in NotificationPayload.model_fields.items()]
    assert table_fields(section("The payload")) == aliases


def test_the_example_is_a_payload() -> None:
    (example,) = re.findall(r"```json\n(.*?)```", section("The payload"), flags=re.DOTALL)
    payload = NotificationPayload.model_validate(json.loads(example))
    assert payload.key == f"{payload.uid}/{payload.transition.value}/2"


def test_every_transition_is_described_and_the_defaults_are_the_models() -> None:
    assert table_fields(section("Transitions")) == [t.value for t in Transition]
    (defaults,) = re.findall(r"on: \[(.*?)\]", PAGE.split("## Transitions")[0])
    assert defaults.split(", ") == [t.value for t in DEFAULT_TRANSITIONS]
