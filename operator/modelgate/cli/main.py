"""modelgate: metric-gated canary rollouts for model deployments (also `kubectl modelrollout`)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable

from modelgate import __version__
from modelgate.api import InvalidSpecError
from modelgate.cli.cluster_errors import explain
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.help_text import document, unknown_command
from modelgate.cli.loopback import allow_loopback_if_asked
from modelgate.kube import KubeError

# Each module of cli/ that adds commands, with the commands it adds, in the order `--help` lists them.
# A command other than `completion` (which walks them all) loads its module alone: the operator's
# process (`modelgate run`) loads neither the evaluator nor the sidecar.
COMMAND_MODULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("run", ("run",)),
    ("render.views", ("get", "status", "history")),
    ("steer", ("promote", "abort", "resume", "retry", "repin")),
    ("report.report", ("report",)),
    ("plan.replay", ("replay",)),
    ("plan.plan", ("plan",)),
    ("refusal_proxy", ("refusal-proxy",)),
    ("gate_eval", ("eval",)),
    ("gate_decide", ("gate",)),
    ("evaluations", ("evaluations", "evaluate-now")),
    ("completion", ("completion",)),
)
COMMANDS = tuple(name for _, names in COMMAND_MODULES for name in names)
ONE_MODULE_COMMANDS = frozenset(COMMANDS) - {"completion"}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; with `command`, that command's module's alone."""
    parser = argparse.ArgumentParser(prog="modelgate", description=__doc__)
    parser.add_argument("--version", action="version", version=f"modelgate {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name, names in COMMAND_MODULES:
        if command is None or command in names:
            module = importlib.import_module(f"modelgate.cli.{module_name}")
            if module_name == "completion":
                module.add_parser(commands, parser)  # it completes the whole parser
            else:
                add = module.add_parsers if hasattr(module, "add_parsers") else module.add_parser
                add(commands)
    document(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    first = argv[0] if argv else None
    if first is not None and not first.startswith("-") and first not in COMMANDS:
        print(f"modelgate: {unknown_command(first, COMMANDS)}", file=sys.stderr)
        return ExitCode.USAGE
    parser = build_parser(first if first in ONE_MODULE_COMMANDS else None)
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    allow_loopback_if_asked(args)
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
