"""What every sub-command's `--help` shows beside its options: a description, examples, the defaults,
and its exit codes. Applied once the parser is built, so that
each command module only declares its arguments."""

from __future__ import annotations

import argparse
import difflib
import re
import textwrap
from collections.abc import Sequence

from modelgate.cli.exit_codes import exit_codes_help

EXAMPLES: dict[str, tuple[str, ...]] = {
    "run": (
        "modelgate run -n serving --log-format console",
        "modelgate run -A --selector team=chat --metrics-address 127.0.0.1:8080",
    ),
    "get": ("modelgate get -n serving", "modelgate get -A -o json"),
    "status": (
        "modelgate status chat -n serving",
        "modelgate status chat -n serving -w --timeout 30m   # in CI: exit 0 only if it Succeeded",
    ),
    "history": ("modelgate history chat -n serving",),
    "promote": ("modelgate promote chat -n serving", "modelgate promote chat -n serving --full"),
    "abort": ("modelgate abort chat -n serving",),
    "resume": ("modelgate resume chat -n serving",),
    "retry": ("modelgate retry chat -n serving",),
    "repin": ("modelgate repin chat -n serving",),
    "report": ("modelgate report chat -n serving -o chat.html --png chat.png",),
    "replay": (
        "modelgate replay -f rollout.yaml --from now-2h",
        "modelgate replay -f rollout.yaml --from 2026-01-05T09:00:00Z --to 2026-01-05T11:00:00Z --aa",
    ),
    "plan": ("modelgate plan -f rollout.yaml --rps 20 --base-rate 0.002 --fail-above 0.05",),
    "refusal-proxy": ("modelgate refusal-proxy --upstream http://127.0.0.1:8000 --port 8080",),
    "eval": (
        "modelgate eval --candidate http://chat-v2:8000/v1 --incumbent http://chat-v1:8000/v1 "
        "--test-set tests.jsonl --result-file result.json",
    ),
    "gate": ("modelgate gate -f rollout.yaml --result quality=result.json",),
    "evaluations": ("modelgate evaluations -n serving", "modelgate evaluations chat-quality -n serving"),
    "evaluate-now": ("modelgate evaluate-now chat-quality -n serving",),
    "completion": (
        "modelgate completion bash > /etc/bash_completion.d/modelgate",
        "source <(modelgate completion zsh)   # in ~/.zshrc",
        "modelgate completion fish > ~/.config/fish/completions/modelgate.fish",
    ),
}


class HelpFormatter(argparse.HelpFormatter):
    """A paragraph of one line (a description) wrapped to the terminal, one of several lines (examples,
    a table) kept as written; every option's default shown unless its help says it or there is none."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = text.split("\n\n")
        return "\n\n".join(
            super(HelpFormatter, self)._fill_text(paragraph, width, indent)
            if "\n" not in paragraph.strip("\n")
            else "\n".join(indent + fitted for line in paragraph.splitlines() for fitted in fit(line, width))
            for paragraph in paragraphs
        )

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or not action.option_strings or not shows_a_default(action):
            return text
        return f"{text} (default: %(default)s)"


def fit(line: str, width: int) -> list[str]:
    """A line of a table or an example within `width`: a command to copy goes on with backslashes
    (a shell joins the lines again) under its comment, a row of a table wraps under its own text."""
    if len(line) <= width:
        return [line]
    text = line.lstrip()
    lead = line[: len(line) - len(text)]
    if text.startswith("modelgate "):
        command, _, comment = text.partition("  # ")
        above = textwrap.wrap(comment, width, initial_indent=f"{lead}# ", subsequent_indent=f"{lead}# ")
        pieces = textwrap.wrap(
            command.rstrip(), width - len(lead) - 2, subsequent_indent="    ", break_on_hyphens=False
        )
        return above + [f"{lead}{piece} \\" for piece in pieces[:-1]] + [lead + pieces[-1]]
    row = re.match(r"\s*\S+\s+", line)
    hang = " " * (row.end() if row else len(lead))
    return textwrap.wrap(line, width, subsequent_indent=hang, break_on_hyphens=False)


def shows_a_default(action: argparse.Action) -> bool:
    """Whether the option's default says anything: not absent, off or empty."""
    default = action.default
    return not (default is None or default is False or default is argparse.SUPPRESS or default == [])


def document(parser: argparse.ArgumentParser) -> None:
    """Gives each sub-command of the parser its description (else its one-line help), examples and
    the help formatter."""
    parser.formatter_class = HelpFormatter
    parser.epilog = _join(parser.epilog, "Each command's --help lists its exit codes.")
    for command in _subcommands(parser):
        sub = parser_of(parser, command.dest)
        sub.formatter_class = HelpFormatter
        sub.description = sub.description or _sentence(command.help)
        examples = "\n".join(f"  {line}" for line in EXAMPLES.get(command.dest, ()))
        if examples:
            sub.epilog = _join(sub.epilog, f"examples:\n{examples}")
        sub.epilog = _join(sub.epilog, exit_codes_help(command.dest))


def unknown_command(typed: str, commands: Sequence[str]) -> str:
    """A mistyped command: the nearest one, if any is near."""
    near = difflib.get_close_matches(typed, commands, n=1, cutoff=0.6)
    if near:
        return f"no command {typed!r}; did you mean `modelgate {near[0]}`?"
    return f"no command {typed!r}; `modelgate --help` lists them."


def _subcommands(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        choice
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
    ]


def parser_of(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            chosen: argparse.ArgumentParser = action.choices[command]
            return chosen
    raise KeyError(command)


def command_names(parser: argparse.ArgumentParser) -> list[str]:
    return [command.dest for command in _subcommands(parser)]


def _sentence(text: str | None) -> str | None:
    return None if not text else f"{text[0].upper()}{text[1:]}."


def _join(first: str | None, second: str) -> str:
    return second if not first else f"{first}\n\n{second}"
