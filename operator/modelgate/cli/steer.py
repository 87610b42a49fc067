"""`modelgate promote|abort|resume|retry NAME`: steer a rollout through the command annotation."""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime, timedelta

from rich.console import Console

from modelgate.api import ModelRolloutStatus
from modelgate.cli.common import add_target_arguments, connect, read_rollout
from modelgate.commands import COMMAND_ANNOTATION, encode_command
from modelgate.core.model import CommandAction
from modelgate.kube import Kube, NotFound

COMMANDS: dict[str, tuple[CommandAction, str]] = {
    "promote": (CommandAction.PROMOTE, "finish the current step (a pause, or a step waiting for analysis)"),
    "abort": (CommandAction.ABORT, "roll back now: all traffic to the incumbent"),
    "resume": (CommandAction.RESUME, "continue after a pause caused by Prometheus errors"),
    "retry": (CommandAction.RETRY, "start again from step 0 after a rollback or failure"),
}
COMMAND_TIMEOUT = 30.0
NOT_APPLIED = 3  # exit code: requested, but the operator did not confirm it in time
IGNORED = 4  # exit code: the operator handled it and found it does not apply (see the Event)


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    for name, (_, help_text) in COMMANDS.items():
        command = commands.add_parser(name, help=help_text)
        add_target_arguments(command)
        if name == "promote":
            command.add_argument(
                "--full", action="store_true", help="skip every remaining step: candidate to 100%%"
            )
        command.add_argument(
            "--no-wait", action="store_true", help="do not wait for the operator to apply it"
        )
        command.set_defaults(handler=send_command, action_name=name)


def send_command(args: argparse.Namespace) -> int:
    kube, namespace = connect(args)
    console = Console()
    action = COMMANDS[args.action_name][0]
    if action is CommandAction.PROMOTE and args.full:
        action = CommandAction.PROMOTE_FULL
    encoded = encode_command(action)
    try:
        kube.patch_annotations(namespace, args.name, {COMMAND_ANNOTATION: encoded})
    except NotFound:
        console.print(f"[red]ModelRollout {namespace}/{args.name} not found[/red]")
        return 1
    if args.no_wait:
        console.print(f"{action.value} requested for {namespace}/{args.name}")
        return 0
    command_id = json.loads(encoded)["id"]
    sent_at = datetime.now(UTC) - timedelta(seconds=1)  # events carry the operator's clock; allow skew
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while time.monotonic() < deadline:
        status = ModelRolloutStatus.model_validate(
            read_rollout(kube, namespace, args.name).get("status") or {}
        )
        if status.last_command_id == command_id:
            ignored = _ignored_because(kube, namespace, args.name, sent_at)
            if ignored is not None:
                console.print(f"[yellow]{action.value} ignored: {ignored}[/yellow]")
                return IGNORED
            console.print(f"{action.value} applied: {status.phase} - {status.message}")
            return 0
        time.sleep(0.5)  # polling the API server until the deadline
    console.print(
        f"[yellow]{action.value} requested, but the operator has not applied it within "
        f"{COMMAND_TIMEOUT:.0f}s: is it running?[/yellow]"
    )
    return NOT_APPLIED


def _ignored_because(kube: Kube, namespace: str, name: str, since: datetime) -> str | None:
    """The operator records a command that does not apply as a CommandIgnored Event."""
    for event in reversed(kube.list_events(namespace, "ModelRollout", name)):
        when = str(event.get("eventTime") or "")
        if event.get("reason") == "CommandIgnored" and when and datetime.fromisoformat(when) >= since:
            return str(event.get("note"))
    return None
