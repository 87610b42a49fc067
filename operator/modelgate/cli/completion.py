"""`modelgate completion bash|zsh`: a shell completion script written from the parser itself, so it
knows every sub-command, option and choice there is (zsh runs the bash one through bashcompinit)."""

from __future__ import annotations

import argparse
import functools

from modelgate.cli.help_text import command_names, parser_of

PROGRAMS = ("modelgate", "kubectl-modelrollout")
ZSH_PRELUDE = "autoload -U +X bashcompinit && bashcompinit\n"


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], root: argparse.ArgumentParser
) -> None:
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script: sub-commands, options and their choices",
        description="Prints a completion script for bash or zsh; load it from your shell's startup file.",
    )
    completion.add_argument("shell", choices=["bash", "zsh"], help="the shell to complete in")
    completion.set_defaults(handler=functools.partial(print_script, root))


def print_script(root: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    print(script(root, args.shell))
    return 0


def script(root: argparse.ArgumentParser, shell: str) -> str:
    bash = _bash(root)
    return ZSH_PRELUDE + bash if shell == "zsh" else bash


def _bash(root: argparse.ArgumentParser) -> str:
    names = command_names(root)
    cases = "\n".join(_bash_case(name, parser_of(root, name)) for name in names)
    return f"""_modelgate() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="${{COMP_WORDS[COMP_CWORD-1]}}" words=''
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W '{" ".join(names)}' -- "$cur")); return
    fi
    case "${{COMP_WORDS[1]}}" in
{cases}
    esac
    COMPREPLY=($(compgen -W "$words" -- "$cur"))
}}
complete -o default -F _modelgate {" ".join(PROGRAMS)}"""


def _bash_case(name: str, parser: argparse.ArgumentParser) -> str:
    """One sub-command: its options, or after an option with choices, those choices."""
    options = " ".join(option for action in parser._actions for option in action.option_strings)
    lines = [f"        {name}) words='{options}'", '            case "$prev" in']
    lines += [
        f"                {'|'.join(action.option_strings)}) words='{' '.join(map(str, action.choices))}' ;;"
        for action in parser._actions
        if action.option_strings and action.choices
    ]
    # An option's free value (a name, a file): nothing from us, so that the shell completes a file.
    free = [
        o
        for a in parser._actions
        if a.option_strings and a.nargs != 0 and not a.choices
        for o in a.option_strings
    ]
    if free:
        lines.append(f"                {'|'.join(free)}) words='' ;;")
    return "\n".join([*lines, "            esac ;;"])
