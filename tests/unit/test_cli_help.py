"""Every sub-command's `--help`, walked from the parser itself: a description, an example to copy,
help for every option with its default, and the exit codes as docs/troubleshooting.md (and, for
`eval`, docs/gate-eval.md) lists them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from modelgate.cli.exit_codes import EVAL_MEANINGS, EvalExitCode, ExitCode, exit_codes_markdown
from modelgate.cli.gate_decide import EXIT_CODES as GATE_EXIT_CODES
from modelgate.cli.help_text import CLUSTER_COMMANDS, command_names, parser_of, shows_a_default
from modelgate.cli.main import build_parser, main

DOC = Path(__file__).resolve().parents[2] / "docs" / "troubleshooting.md"
EVAL_DOC = DOC.with_name("gate-eval.md")
PARSER = build_parser()


@pytest.mark.parametrize("command", command_names(PARSER))
def test_every_command_describes_itself_with_an_example(command: str) -> None:
    sub = parser_of(PARSER, command)
    assert sub.description, f"`modelgate {command}` has no description"
    shown = sub.format_help()
    lines = [line.strip() for line in shown.splitlines()]
    examples = [line for line in lines if line.startswith(f"modelgate {command} ")]
    assert examples, f"`modelgate {command} --help` shows no example:\n{shown}"
    for example in examples:  # each example is a command line the parser takes (up to a redirection)
        command_line = re.split(r"[#>|<]", example)[0]
        PARSER.parse_args(command_line.split()[1:])


@pytest.mark.parametrize("command", command_names(PARSER))
def test_every_option_has_help_and_shows_its_default(command: str) -> None:
    sub = parser_of(PARSER, command)
    formatter = sub.formatter_class(prog=sub.prog)
    for action in sub._actions:
        assert action.help, f"`modelgate {command}`: {action.option_strings or action.dest} has no help"
        if action.option_strings and shows_a_default(action):
            shown = formatter._get_help_string(action) or ""
            assert "default" in shown, f"`modelgate {command}`: {action.option_strings} hides its default"


def test_the_exit_codes_are_in_the_help_and_the_troubleshooting_guide() -> None:
    assert exit_codes_markdown() in DOC.read_text(), f"paste exit_codes_markdown() into {DOC.name}"
    for command in CLUSTER_COMMANDS:
        shown = parser_of(PARSER, command).format_help()
        assert all(f"  {code.value}  " in shown for code in ExitCode), command


def test_evals_own_exit_codes_are_in_its_help_and_its_guide() -> None:
    assert exit_codes_markdown(EVAL_MEANINGS) in EVAL_DOC.read_text(), f"paste it into {EVAL_DOC.name}"
    shown = parser_of(PARSER, "eval").format_help()
    assert all(f"  {code.value}  " in shown for code in EvalExitCode)
    # Its own code for a side that answered nothing is no other command's, so no script mistakes it.
    assert EvalExitCode.NO_ANSWER not in {*ExitCode, *GATE_EXIT_CODES.values()}


def test_a_malformed_timeout_is_refused_naming_the_form() -> None:
    with pytest.raises(SystemExit) as refused:
        PARSER.parse_args(["status", "chat", "-w", "--timeout", "5 minutes"])
    assert refused.value.code == ExitCode.USAGE


@pytest.mark.parametrize("seconds", ["0", "-1", "soon"])
def test_a_route_recheck_that_is_not_a_positive_number_is_refused_naming_the_option(
    seconds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as refused:
        PARSER.parse_args(["run", "--route-recheck", seconds])
    assert refused.value.code == ExitCode.USAGE
    assert "--route-recheck" in capsys.readouterr().err


def test_a_route_recheck_in_seconds_reaches_the_operator() -> None:
    assert PARSER.parse_args(["run", "--route-recheck", "0.5"]).route_recheck == 0.5


def slipped(word: str) -> str:
    """The word with its last letter doubled: a typing slip."""
    return word + word[-1]


@pytest.mark.parametrize("command", command_names(PARSER))
def test_a_mistyped_command_is_answered_with_the_one_meant(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([slipped(command), "x"]) == ExitCode.USAGE
    said = capsys.readouterr().err
    assert f"did you mean `modelgate {command}`" in said and len(said.splitlines()) == 1


def test_a_word_near_no_command_is_pointed_at_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["kubernetes"]) == ExitCode.USAGE
    assert "did you mean" not in capsys.readouterr().err
