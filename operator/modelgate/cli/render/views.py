"""`modelgate get|status|history`: look at rollouts."""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live

from modelgate.api import parse_spec
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.render.rollout import render_history, render_list, render_progress, render_status
from modelgate.cli.render.watch_exit import timeout_argument, watch_outcome
from modelgate.cli.render.watch_lines import WatchLines
from modelgate.cli.target import OUTPUT_HELP, add_target_arguments, connect, list_rollouts, read_rollout
from modelgate.core import LiveRoute
from modelgate.kube import Kube, KubeError, NotFound
from modelgate.routers import SideKinds, router_for

REFRESH_SECONDS = 1.0


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    get = commands.add_parser("get", help="list rollouts: phase, weight, step, incumbent, candidate, age")
    add_target_arguments(get, name="optional")
    get.add_argument("-A", "--all-namespaces", action="store_true", help="list every namespace's rollouts")
    get.add_argument("-o", "--output", choices=["table", "json"], default="table", help=OUTPUT_HELP)
    get.set_defaults(handler=show_list)

    status = commands.add_parser("status", help="progress, weights and every metric against its threshold")
    add_target_arguments(status, name="optional")
    status.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="keep the view live until every rollout ends (no terminal: a line per change)",
    )
    status.add_argument(
        "--timeout",
        type=timeout_argument,
        metavar="DURATION",
        help=f"with -w: give up after DURATION (e.g. 5m, 1h30m) and exit {ExitCode.TIMED_OUT.value} "
        "(default: wait for ever)",
    )
    status.add_argument("-o", "--output", choices=["table", "json"], default="table", help=OUTPUT_HELP)
    status.set_defaults(handler=show_status)

    history = commands.add_parser("history", help="what happened: transitions (Events) and recent analyses")
    add_target_arguments(history)
    history.set_defaults(handler=show_history)


def _not_found(console: Console, namespace: str, name: str) -> int:
    console.print(f"[red]ModelRollout {namespace}/{name} not found[/red]")
    return 1


def show_list(args: argparse.Namespace) -> int:
    kube, namespace = connect(args)
    rollouts = list_rollouts(kube, None if args.all_namespaces else namespace)
    if args.name:
        rollouts = [r for r in rollouts if r["metadata"]["name"] == args.name]
    console = Console()
    if args.output == "json":
        console.print_json(json.dumps(rollouts))
    elif not rollouts:  # on stderr, as kubectl says it: stdout stays empty for a script
        Console(stderr=True).print(no_rollouts(args.name, None if args.all_namespaces else namespace))
    else:
        console.print(render_list(rollouts, with_namespace=args.all_namespaces))
    return 0


def no_rollouts(name: str | None, namespace: str | None) -> str:
    """What `get` says when it lists nothing; namespace None: all of them."""
    what = f"No ModelRollout named {name}" if name else "No ModelRollouts"
    return f"{what} in {'any namespace' if namespace is None else f'namespace {namespace}'}."


def live_weights(kube: Kube, namespace: str, body: dict[str, Any]) -> tuple[int, int] | str:
    try:
        spec = parse_spec(body["spec"])
        live = router_for(spec.traffic_routing, kube, namespace, SideKinds.of(spec)).read()
    except (KubeError, ValueError) as error:
        return f"cannot read the route: {error}"
    return (live.incumbent_weight, live.candidate_weight) if isinstance(live, LiveRoute) else live.message


def _view(kube: Kube, namespace: str, rollouts: list[dict[str, Any]]) -> RenderableType:
    parts: list[RenderableType] = [render_progress(rollouts)]
    for body in rollouts:
        parts.append(
            render_status(body, live_weights=live_weights(kube, namespace, body), now=datetime.now(UTC))
        )
    return Group(*parts)


def _targets(kube: Kube, namespace: str, name: str | None) -> list[dict[str, Any]]:
    if name:
        return [read_rollout(kube, namespace, name)]
    return list_rollouts(kube, namespace)


def show_status(args: argparse.Namespace) -> int:
    kube, namespace = connect(args)
    console = Console()
    try:
        rollouts = _targets(kube, namespace, args.name)
    except NotFound:
        return _not_found(console, namespace, args.name)
    if args.output == "json":
        console.print_json(json.dumps([r.get("status") or {} for r in rollouts]))
        return 0
    if not args.watch and args.timeout is None:
        console.print(_view(kube, namespace, rollouts))
        return 0
    deadline = None if args.timeout is None else time.monotonic() + args.timeout.total_seconds()
    if not console.is_terminal:
        return _watch_in_lines(console, kube, namespace, args, rollouts, deadline)
    with Live(_view(kube, namespace, rollouts), console=console, refresh_per_second=4) as live:
        while (outcome := watch_outcome(rollouts)) is None:
            if deadline is not None and time.monotonic() >= deadline:
                live.console.print(_timed_out(args))
                return ExitCode.TIMED_OUT
            time.sleep(REFRESH_SECONDS)  # a screen refresh
            rollouts = _targets(kube, namespace, args.name)
            live.update(_view(kube, namespace, rollouts))
    return outcome


def _watch_in_lines(
    console: Console,
    kube: Kube,
    namespace: str,
    args: argparse.Namespace,
    rollouts: list[dict[str, Any]],
    deadline: float | None,
) -> int:
    """No terminal: a timed line per change, printed (and flushed) at once and never wrapped (a log
    reads a line an event), then the whole view at the end."""
    lines = WatchLines()
    while True:
        for line in lines.changed(rollouts):
            console.print(
                f"{datetime.now(UTC):%H:%M:%S} {line}", markup=False, highlight=False, soft_wrap=True
            )
        if (outcome := watch_outcome(rollouts)) is not None:
            console.print(_view(kube, namespace, rollouts))
            return outcome
        if deadline is not None and time.monotonic() >= deadline:
            console.print(_timed_out(args))
            return ExitCode.TIMED_OUT
        time.sleep(REFRESH_SECONDS)
        rollouts = _targets(kube, namespace, args.name)


def _timed_out(args: argparse.Namespace) -> str:
    return f"[yellow]not ended within {args.timeout.total_seconds():g}s[/yellow]"


def show_history(args: argparse.Namespace) -> int:
    kube, namespace = connect(args)
    console = Console()
    try:
        body = read_rollout(kube, namespace, args.name)
    except NotFound:
        return _not_found(console, namespace, args.name)
    events = kube.list_events(namespace, "ModelRollout", args.name)
    console.print(render_history(body, events))
    return 0
