"""modelgate: metric-gated canary rollouts for model deployments (also `kubectl modelrollout`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from modelgate import __version__
from modelgate.api import InvalidSpecError
from modelgate.cli import (
    completion,
    evaluations,
    gate_decide,
    gate_eval,
    plan,
    refusal_proxy,
    replay,
    report,
    run,
    steer,
    views,
)
from modelgate.cli.cluster_errors import explain
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.help_text import document
from modelgate.kube import KubeError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="modelgate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"modelgate {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run.add_parser(commands)
    views.add_parsers(commands)
    steer.add_parsers(commands)
    report.add_parser(commands)
    replay.add_parser(commands)
    plan.add_parser(commands)
    refusal_proxy.add_parser(commands)
    gate_eval.add_parser(commands)
    gate_decide.add_parser(commands)
    evaluations.add_parsers(commands)
    completion.add_parser(commands, parser)
    document(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except InvalidSpecError as error:
        # A rollout whose stored status the models cannot read (edited by hand, an older CRD): say
        # which field, rather than a traceback.
        print(f"modelgate: a ModelRollout cannot be read: {error}", file=sys.stderr)
        return ExitCode.ERROR
    except KubeError as error:  # no cluster to ask: one line, not a traceback
        print(f"modelgate: {explain(error)}", file=sys.stderr)
        return ExitCode.ERROR


if __name__ == "__main__":
    sys.exit(main())
