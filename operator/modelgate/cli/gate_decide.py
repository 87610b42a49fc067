"""`modelgate gate`: the gate's decision on results measured outside the cluster.

`modelgate gate`: the gate's decision on results measured outside the cluster, by the operator's
own policy code (core/gate_judgement.py), so that CI can run the decision before it applies the rollout. The
exit code is the decision (cli/exit_codes.py)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from modelgate.api import parse_spec
from modelgate.api.errors import InvalidSpecError
from modelgate.api.gate import GateCheck, GateSpec
from modelgate.api.gate_result import GateResult
from modelgate.api.gate_status import CheckState, CheckStatus, GateDecision
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.render.gate import VERDICT_STYLE
from modelgate.cli.target import read_manifest
from modelgate.core.gate_judgement import decide_gate, judge_result

EXIT_CODES = {
    GateDecision.FULL: ExitCode.OK,
    GateDecision.CANARY: ExitCode.CANARY,
    GateDecision.REJECT: ExitCode.REJECTED,
}
UNREADABLE = ExitCode.ERROR


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "gate",
        help="decide a rollout's gate on check results, as the operator would (for CI)",
        description="Judges each check's GateResult (the JSON `modelgate eval` or a custom check "
        "writes) against spec.gate of a ModelRollout manifest and prints the decision, which is also "
        "its exit code.",
    )
    parser.add_argument("-f", "--filename", type=Path, required=True, help="a ModelRollout manifest")
    parser.add_argument(
        "--result",
        action="append",
        default=[],
        metavar="CHECK=FILE",
        help="the GateResult JSON of one check of spec.gate.checks (once per check)",
    )
    parser.set_defaults(handler=run_gate)


def run_gate(args: argparse.Namespace) -> int:
    console = Console()
    try:
        gate, results = _inputs(args.filename, args.result)
    except (OSError, ValueError, InvalidSpecError) as error:
        console.print(f"[red]modelgate gate: {error}[/red]")
        return UNREADABLE
    now = datetime.now(UTC)
    checks = tuple(_judged(check, results[check.name], now) for check in gate.checks)
    outcome = decide_gate(gate, checks)
    assert outcome is not None  # every check was judged
    console.print(_table(checks))
    console.print(f"decision: {outcome.decision}: {outcome.message}")
    return EXIT_CODES[outcome.decision]


def _inputs(path: Path, given: list[str]) -> tuple[GateSpec, dict[str, GateResult]]:
    gate = parse_spec(read_manifest(path).get("spec") or {}).gate
    if gate is None:
        raise ValueError(f"{path}: the rollout has no spec.gate")
    files: dict[str, Path] = {}
    for item in given:
        name, separator, file = item.partition("=")
        if not separator or not name or not file:
            raise ValueError(f"--result {item!r}: expected CHECK=FILE")
        files[name] = Path(file)
    names = [check.name for check in gate.checks]
    unknown = sorted(set(files) - set(names))
    missing = [name for name in names if name not in files]
    if unknown or missing:
        raise ValueError(
            f"--result: one per check of spec.gate.checks ({', '.join(names)}); "
            + "; ".join(
                ([f"missing: {', '.join(missing)}"] if missing else [])
                + ([f"no such check: {', '.join(unknown)}"] if unknown else [])
            )
        )
    return gate, {name: _result(name, file) for name, file in files.items()}


def _result(check: str, file: Path) -> GateResult:
    try:
        return GateResult.model_validate_json(file.read_text(encoding="utf-8"))
    except ValidationError as error:
        problems = InvalidSpecError.from_validation_error(error, root="result").problems
        raise ValueError(f"--result {check}={file}: not a GateResult: {'; '.join(problems)}") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"--result {check}={file}: not JSON: {error}") from None


def _judged(check: GateCheck, result: GateResult, now: datetime) -> CheckStatus:
    running = CheckStatus(name=check.name, job="local", state=CheckState.RUNNING)
    return judge_result(check, running, result, now)


def _table(checks: tuple[CheckStatus, ...]) -> Table:
    table = Table("check", "verdict", "why", box=None)
    for check in checks:
        style = VERDICT_STYLE.get(check.verdict, "") if check.verdict is not None else ""
        table.add_row(check.name, f"[{style}]{check.verdict}[/]", check.message or "")
    return table
