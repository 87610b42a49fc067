"""`modelgate promote|abort|resume|retry|repin NAME`: steer a rollout through the command annotation."""

from __future__ import annotations

import argparse
import json
import time

from rich.console import Console

from modelgate.api import CommandResult, parse_status
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.target import add_target_arguments, connect, read_rollout
from modelgate.commands import COMMAND_ANNOTATION, encode_command
from modelgate.core import CommandAction
from modelgate.kube import NotFound

COMMANDS: dict[str, tuple[CommandAction, str]] = {
    "promote": (CommandAction.PROMOTE, "finish the current step (a pause, or a step waiting for analysis)"),
    "abort": (CommandAction.ABORT, "roll back now: all traffic to the incumbent"),
    "resume": (
        CommandAction.RESUME,
        "continue after a pause on Prometheus errors, a progress deadline or a route conflict",
    ),
    "retry": (CommandAction.RETRY, "start again from step 0 after a rollback or failure"),
    "repin": (
        CommandAction.REPIN,
        "adopt spec.policyRef's policy as it is now, in place of the one pinned when the rollout started",
    ),
}
COMMAND_TIMEOUT = 30.0


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
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while time.monotonic() < deadline:
        status = parse_status(read_rollout(kube, namespace, args.name).get("status") or {})
        handled = status.last_command
        if handled is not None and handled.id == command_id:
            if handled.result is CommandResult.IGNORED:
                console.print(f"[yellow]{action.value} ignored: {handled.message}[/yellow]")
                return ExitCode.IGNORED
            console.print(f"{action.value} applied: {handled.message}; {status.phase} - {status.message}")
            return 0
        time.sleep(0.5)  # polling the API server until the deadline
    console.print(
        f"[yellow]{action.value} requested, but the operator has not applied it within "
        f"{COMMAND_TIMEOUT:.0f}s: is it running?[/yellow]"
    )
    return ExitCode.NOT_CONFIRMED
