"""Every sub-command's `--help`, walked from the parser itself: a description, an example to copy,
help for every option with its default, every line within 80 columns; a mistyped command is
answered with the one meant."""

from __future__ import annotations

import re

import pytest

from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.help_text import command_names, parser_of, shows_a_default
from modelgate.cli.main import build_parser, main

PARSER = build_parser()


@pytest.mark.parametrize("command", command_names(PARSER))
def test_every_command_describes_itself_with_an_example(command: str) -> None:
    sub = parser_of(PARSER, command)
    assert sub.description, f"`modelgate {command}` has no description"
    shown = sub.format_help()
    lines = [line.strip() for line in shown.splitlines()]
    joined = re.sub(r" \\\n\s*", " ", "\n".join(lines))  # an example continued with backslashes
    examples = [line for line in joined.splitlines() if line.startswith(f"modelgate {command} ")]
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


@pytest.mark.parametrize("command", [None, *command_names(PARSER)])
def test_help_fits_80_columns(command: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    sub = PARSER if command is None else parser_of(PARSER, command)
    wide = [line for line in sub.format_help().splitlines() if len(line) > 80]
    assert not wide, wide
