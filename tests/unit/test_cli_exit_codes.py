"""One table of exit codes for every command: no code has two meanings, each command's `--help`
lists exactly the codes it exits with, the codes its code returns are among them, and the docs
carry the table (the whole of it in docs/troubleshooting.md, a command's rows on its page)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from modelgate.api.gate_status import GateDecision
from modelgate.cli import gate_decide
from modelgate.cli.exit_codes import COMMAND_CODES, MEANINGS, ExitCode, exit_codes_markdown
from modelgate.cli.help_text import command_names, parser_of
from modelgate.cli.main import build_parser, main
from modelgate.cli.plan import plan
from modelgate.cli.render import watch_exit
from tests.unit.engine_support import make_spec, weight

DOCS = Path(__file__).resolve().parents[2] / "docs"
PARSER = build_parser()
# The page that documents each command's codes beside the command; the others are in the table.
PAGES = {"eval": "gate-eval.md", "plan": "plan.md", "gate": "gate.md"}


def test_each_code_has_one_value_and_one_meaning() -> None:
    values = [code.value for code in ExitCode.__members__.values()]
    assert len(values) == len(set(values)), "two names alias one value: IntEnum would merge them"
    assert list(MEANINGS) == list(ExitCode)
    assert len(set(MEANINGS.values())) == len(MEANINGS)


def test_every_command_has_its_codes_and_every_code_a_command() -> None:
    assert set(COMMAND_CODES) == set(command_names(PARSER))
    used = {code for codes in COMMAND_CODES.values() for code in codes}
    assert used == set(ExitCode)
    assert all({ExitCode.OK, ExitCode.USAGE} <= set(codes) for codes in COMMAND_CODES.values())


@pytest.mark.parametrize("command", command_names(PARSER))
def test_each_commands_help_lists_exactly_its_codes(command: str) -> None:
    shown = parser_of(PARSER, command).format_help()
    table = shown.split("exit codes:\n", 1)[1]
    listed = {int(number) for number in re.findall(r"^\s{2,3}(\d+)  ", table, re.MULTILINE)}
    assert listed == {code.value for code in COMMAND_CODES[command]}


def test_the_global_help_holds_no_table() -> None:
    assert "exit codes:" not in PARSER.format_help()


def test_the_codes_the_commands_return_are_theirs() -> None:
    assert set(gate_decide.EXIT_CODES.values()) | {gate_decide.UNREADABLE} <= set(COMMAND_CODES["gate"])
    planned = {
        plan.EXIT_OK,
        plan.EXIT_UNREADABLE,
        plan.EXIT_USAGE,
        plan.EXIT_COIN_TOSS,
        plan.EXIT_NOTHING_TO_PLAN,
    }
    assert planned <= set(COMMAND_CODES["plan"])
    assert set(watch_exit.ENDED.values()) <= set(COMMAND_CODES["status"])
    # The three meanings code 3 had each have a code of their own.
    assert (
        len(
            {
                ExitCode.NOT_CONFIRMED,
                gate_decide.EXIT_CODES[GateDecision.CANARY],
                plan.EXIT_COIN_TOSS,
            }
        )
        == 3
    )


def test_the_troubleshooting_guide_carries_the_whole_table() -> None:
    assert exit_codes_markdown() in (DOCS / "troubleshooting.md").read_text(), "run the generator"


@pytest.mark.parametrize(("command", "page"), PAGES.items())
def test_a_commands_page_carries_its_rows(command: str, page: str) -> None:
    assert exit_codes_markdown(command) in (DOCS / page).read_text(), (
        f"paste exit_codes_markdown({command!r})"
    )


def manifest(tmp_path: Path, *, with_analysis: bool) -> Path:
    spec = make_spec(weight(10), with_analysis=with_analysis)
    body = {"apiVersion": "modelgate.io/v1alpha1", "kind": "ModelRollout", "metadata": {"name": "chat"}}
    path = tmp_path / "rollout.yaml"
    path.write_text(
        yaml.safe_dump(body | {"spec": spec.model_dump(by_alias=True, exclude_none=True, mode="json")})
    )
    return path


def test_replays_codes_tell_a_wrong_command_line_from_a_rollout_with_nothing_to_replay(
    tmp_path: Path,
) -> None:
    without = manifest(tmp_path, with_analysis=False)
    assert main(["replay", "-f", str(without), "--from", "now-1h"]) == ExitCode.NOTHING_TO_SIMULATE
    assert main(["replay", "-f", str(without), "--from", "now", "--to", "now-1h"]) == ExitCode.USAGE
    assert main(["replay", "-f", str(tmp_path / "absent.yaml"), "--from", "now-1h"]) == ExitCode.ERROR


@pytest.mark.parametrize(
    "options",
    [[], ["--replay", "a.jsonl", "--replay-recorded", "s3://b/p"], ["--judge", "http://127.0.0.1:1/v1"]],
    ids=["no input", "two replays", "a judge with nothing to judge"],
)
def test_evals_options_that_do_not_go_together_are_a_refused_command_line(
    options: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    endpoints = ["--candidate", "http://127.0.0.1:1/v1", "--incumbent", "http://127.0.0.1:2/v1"]
    assert main(["eval", *endpoints, *options, "--result-file", "/dev/null"]) == ExitCode.USAGE
    assert capsys.readouterr().err.startswith("modelgate eval: ")
