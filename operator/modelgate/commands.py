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

from modelgate.core import COMMAND_ANNOTATION, Command, CommandAction, CommandProblem, UnreadableCommand

# "true": the operator leaves this rollout alone (no reads of its route, no writes at all), e.g.
# while a person steers traffic by hand; removing it resumes from what status says.
SKIP_RECONCILE_ANNOTATION = "modelgate.io/skip-reconcile"
MAX_COMMAND_ID = 253  # status.lastCommand.id's

__all__ = [
    "COMMAND_ANNOTATION",
    "SKIP_RECONCILE_ANNOTATION",
    "decode_command",
    "encode_command",
    "skips_reconcile",
]


def skips_reconcile(annotations: Mapping[str, str] | None) -> bool:
    return (annotations or {}).get(SKIP_RECONCILE_ANNOTATION) == "true"


def encode_command(action: CommandAction) -> str:
    return json.dumps({"action": action.value, "id": uuid.uuid4().hex})


def decode_command(annotations: Mapping[str, str] | None) -> Command | UnreadableCommand | None:
    """The pending command, None without one, or what is wrong with an annotation that is not one."""
    raw = (annotations or {}).get(COMMAND_ANNOTATION)
    if raw is None:
        return None
    try:
        payload = json.loads(raw)
    except ValueError:
        return UnreadableCommand(raw, CommandProblem.NOT_JSON)
    if not isinstance(payload, dict):
        return UnreadableCommand(raw, CommandProblem.NOT_AN_OBJECT)
    action = payload.get("action")
    if action not in {a.value for a in CommandAction}:
        return UnreadableCommand(raw, CommandProblem.UNKNOWN_ACTION)
    command_id = payload.get("id")
    if not isinstance(command_id, str) or not 0 < len(command_id) <= MAX_COMMAND_ID:
        return UnreadableCommand(raw, CommandProblem.BAD_ID)
    return Command(action=CommandAction(action), id=command_id)
