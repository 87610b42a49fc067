"""`modelgate evaluations` (each ModelEvaluation's score trend) and `modelgate evaluate-now`.

`modelgate evaluations` (the score trend of each ModelEvaluation) and `modelgate evaluate-now`
(a run now, through the modelgate.io/run-now annotation)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from modelgate import API_GROUP, API_VERSION, EVALUATION_PLURAL
from modelgate.api.evaluation_status import parse_evaluation_status
from modelgate.cli.evaluation_history import evaluation_history
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.loopback import add_loopback_option
from modelgate.cli.render.evaluation_trend import LEGEND, render_trend
from modelgate.cli.report.output import OutputFailed, write_output
from modelgate.cli.target import connect
from modelgate.kube import NotFound
from modelgate.modelevaluation.engine.decision import RUN_NOW_ANNOTATION


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    trend = commands.add_parser("evaluations", help="each ModelEvaluation's score trend per check")
    trend.add_argument("name", nargs="?", help="the ModelEvaluation (default: every one in the namespace)")
    trend.add_argument(
        "-o",
        "--output",
        help="the named ModelEvaluation's history (runs, scores per check, baseline) as JSON instead: "
        "`json` to stdout, a file, or s3://bucket/key to write it to object storage with the $AWS_* "
        "credentials",
    )
    _cluster_arguments(trend)
    add_loopback_option(trend)  # an -o s3:// store on this machine
    trend.set_defaults(handler=show_trend)
    now = commands.add_parser("evaluate-now", help="start a run of a ModelEvaluation now")
    now.add_argument("name", help="the ModelEvaluation")
    _cluster_arguments(now)
    now.set_defaults(handler=evaluate_now)


def _cluster_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-n", "--namespace", help="default: the kubeconfig context's namespace")
    parser.add_argument("--kubeconfig", type=Path, help="default: $KUBECONFIG or ~/.kube/config")


def show_trend(args: argparse.Namespace) -> int:
    if args.output and not args.name:
        print("modelgate evaluations: --output needs the ModelEvaluation's NAME", file=sys.stderr)
        return ExitCode.USAGE
    kube, namespace = connect(args)
    if args.name:
        try:
            bodies = [kube.get_custom(API_GROUP, API_VERSION, namespace, EVALUATION_PLURAL, args.name)]
        except NotFound:
            print(f"ModelEvaluation {namespace}/{args.name} not found")
            return ExitCode.ERROR
    else:
        bodies = kube.list_custom(API_GROUP, API_VERSION, namespace, EVALUATION_PLURAL)
    if not bodies:
        print(f"no ModelEvaluations in namespace {namespace}")
        return 0
    if args.output:
        return _write_history(namespace, bodies[0], args.output)
    for body in bodies:
        status = parse_evaluation_status(body.get("status") or {})
        schedule = str((body.get("spec") or {}).get("schedule", "?"))
        print("\n".join(render_trend(namespace, body["metadata"]["name"], schedule, status)))
        print()
    print(LEGEND)
    return 0


def _write_history(namespace: str, body: Mapping[str, Any], output: str) -> int:
    status = parse_evaluation_status(body.get("status") or {})
    schedule = str((body.get("spec") or {}).get("schedule", ""))
    history = evaluation_history(namespace, body["metadata"]["name"], schedule, status)
    if output == "json":
        print(history)
        return 0
    try:
        written = write_output(output, history)
    except OutputFailed as error:
        print(f"modelgate evaluations: {error}", file=sys.stderr)
        return ExitCode.ERROR
    print(f"wrote {written}")
    return 0


def evaluate_now(args: argparse.Namespace) -> int:
    """A new annotation value is a new request: the operator starts one run for it."""
    kube, namespace = connect(args)
    token = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    try:
        kube.patch_evaluation_annotations(namespace, args.name, {RUN_NOW_ANNOTATION: token})
    except NotFound:
        print(f"ModelEvaluation {namespace}/{args.name} not found")
        return ExitCode.ERROR
    print(f"ModelEvaluation {namespace}/{args.name}: a run was requested ({RUN_NOW_ANNOTATION}={token})")
    return 0
