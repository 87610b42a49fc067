"""Manual commands travel from the CLI to the operator as one annotation on the ModelRollout.

`modelgate.io/command: {"action": "promote", "id": "<uuid>"}`. The operator records the id it
handled in `status.lastCommandId` (so a command is applied once, even across restarts) and then
removes the annotation. An annotation rather than a status field: users may patch metadata with
their ordinary RBAC, while the status belongs to the operator.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

from modelgate.core import Command, CommandAction

COMMAND_ANNOTATION = "modelgate.io/command"
# "true": the operator leaves this rollout alone (no reads of its route, no writes at all), e.g.
# while a person steers traffic by hand; removing it resumes from what status says.
SKIP_RECONCILE_ANNOTATION = "modelgate.io/skip-reconcile"


def skips_reconcile(annotations: Mapping[str, str] | None) -> bool:
    return (annotations or {}).get(SKIP_RECONCILE_ANNOTATION) == "true"


def encode_command(action: CommandAction) -> str:
    return json.dumps({"action": action.value, "id": uuid.uuid4().hex})


def decode_command(annotations: Mapping[str, str] | None) -> Command | None:
    """The pending command, or None; an unreadable annotation raises ValueError naming it."""
    raw = (annotations or {}).get(COMMAND_ANNOTATION)
    if raw is None:
        return None
    try:
        payload = json.loads(raw)
        return Command(action=CommandAction(payload["action"]), id=str(payload["id"]))
    except (ValueError, KeyError, TypeError) as error:
        known = ", ".join(a.value for a in CommandAction)
        raise ValueError(
            f"annotation {COMMAND_ANNOTATION} must be JSON like "
            f'{{"action": "promote", "id": "..."}} with action one of {known}; got {raw!r} ({error})'
        ) from None
