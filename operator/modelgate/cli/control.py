"""`modelgate status|promote|abort|resume|retry NAME -n NS`: look at and steer a rollout."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutStatus
from modelgate.cli.render import render_status
from modelgate.commands import COMMAND_ANNOTATION, encode_command
from modelgate.core.model import CommandAction
from modelgate.kube import Kube, NotFound, default_namespace

COMMANDS: dict[str, tuple[CommandAction | None, str]] = {
    "promote": (CommandAction.PROMOTE, "finish the current step (a pause, or a step waiting for analysis)"),
    "abort": (CommandAction.ABORT, "roll back now: all traffic to the incumbent"),
    "resume": (CommandAction.RESUME, "continue after a pause caused by Prometheus errors"),
    "retry": (CommandAction.RETRY, "start again from step 0 after a rollback or failure"),
}
COMMAND_TIMEOUT = 30.0


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", help="the ModelRollout")
    parser.add_argument("-n", "--namespace", help="default: the kubeconfig context's namespace")
    parser.add_argument("--kubeconfig", type=Path, help="default: $KUBECONFIG or ~/.kube/config")


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    status = commands.add_parser("status", help="phase, step, weights and every metric against its threshold")
    _common(status)
    status.add_argument("-o", "--output", choices=["table", "json"], default="table")
    status.set_defaults(handler=show_status)
    for name, (_, help_text) in COMMANDS.items():
        command = commands.add_parser(name, help=help_text)
        _common(command)
        if name == "promote":
            command.add_argument(
                "--full", action="store_true", help="skip every remaining step: candidate to 100%%"
            )
        command.add_argument(
            "--no-wait", action="store_true", help="do not wait for the operator to apply it"
        )
        command.set_defaults(handler=send_command, action_name=name)


def _target(args: argparse.Namespace) -> tuple[Kube, str]:
    namespace = args.namespace or default_namespace(args.kubeconfig)
    return Kube.from_kubeconfig(args.kubeconfig), namespace


def _read(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    return kube.get_custom(API_GROUP, API_VERSION, namespace, PLURAL, name)


def show_status(args: argparse.Namespace) -> int:
    kube, namespace = _target(args)
    console = Console()
    try:
        body = _read(kube, namespace, args.name)
    except NotFound:
        console.print(f"[red]ModelRollout {namespace}/{args.name} not found[/red]")
        return 1
    if args.output == "json":
        console.print_json(json.dumps(body.get("status") or {}))
        return 0
    console.print(render_status(body, live_weights=_live_weights(kube, namespace, body)))
    return 0


def _live_weights(kube: Kube, namespace: str, body: dict[str, Any]) -> tuple[int, int] | str:
    from modelgate.api import parse_spec
    from modelgate.core.model import LiveRoute
    from modelgate.routers import router_for

    spec = parse_spec(body["spec"])
    live = router_for(spec.traffic_routing, kube, namespace).read()
    return (live.incumbent_weight, live.candidate_weight) if isinstance(live, LiveRoute) else live.message


def send_command(args: argparse.Namespace) -> int:
    kube, namespace = _target(args)
    console = Console()
    action = COMMANDS[args.action_name][0]
    if action is CommandAction.PROMOTE and args.full:
        action = CommandAction.PROMOTE_FULL
    assert action is not None
    encoded = encode_command(action)
    try:
        kube.patch_annotations(namespace, args.name, {COMMAND_ANNOTATION: encoded})
    except NotFound:
        console.print(f"[red]ModelRollout {namespace}/{args.name} not found[/red]")
        return 1
    command_id = json.loads(encoded)["id"]
    if args.no_wait:
        console.print(f"{action.value} requested for {namespace}/{args.name}")
        return 0
    deadline = time.monotonic() + COMMAND_TIMEOUT
    while time.monotonic() < deadline:
        status = ModelRolloutStatus.model_validate(_read(kube, namespace, args.name).get("status") or {})
        if status.last_command_id == command_id:
            console.print(f"{action.value} applied: {status.phase} - {status.message}")
            return 0
        time.sleep(0.5)  # polling the API server with a deadline
    console.print(
        f"[yellow]{action.value} requested, but the operator has not applied it within "
        f"{COMMAND_TIMEOUT:.0f}s: is it running?[/yellow]"
    )
    return 3
