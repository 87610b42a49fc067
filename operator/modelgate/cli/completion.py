"""`modelgate completion bash|zsh|fish`: a shell completion script. Bash's is written from the parser
itself, so it knows every sub-command, option and choice there is without starting Python (zsh runs it
through bashcompinit); names from the cluster (namespaces after -n, a command's ModelRollout) it asks of
`kubectl_complete-modelrollout` (cli/completion_words.py), which fish asks for every word."""

from __future__ import annotations

import argparse
import functools

from modelgate.cli.help_text import command_names, parser_of
from modelgate.cli.target import COMPLETES, ROLLOUTS

PROGRAMS = ("modelgate", "kubectl-modelrollout")
ZSH_PRELUDE = "autoload -U +X bashcompinit && bashcompinit\n"
# The console script (pyproject's [project.scripts]) that kubectl runs to complete the plugin.
COMPLETER = "kubectl_complete-modelrollout"
# Bash: the cluster's names for the word being typed, from the words before it ("" if none answer).
BASH_NAMES = f"""_modelgate_names() {{
    command -v {COMPLETER} >/dev/null || return
    {COMPLETER} "${{COMP_WORDS[@]:1:$COMP_CWORD}}" 2>/dev/null | grep -v '^:'
}}
"""
# Fish: every word from the completer; file names where its last line (Cobra's directive) allows.
FISH = f"""function __modelgate_complete
    set -l out ({COMPLETER} (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)
    string match -v -r '^:[0-9]+$' -- $out
    if test "$out[-1]" = ":0"
        __fish_complete_path (commandline -ct)
    end
end
""" + "".join(f"complete -c {program} -f -a '(__modelgate_complete)'\n" for program in PROGRAMS)


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], root: argparse.ArgumentParser
) -> None:
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script: sub-commands, options and their choices",
        description="Prints a completion script for bash, zsh or fish; load it from your shell's "
        f"startup file. Names from the cluster come from {COMPLETER}, installed with modelgate "
        "(kubectl 1.26 or later runs it to complete `kubectl modelrollout`).",
    )
    completion.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell to complete in")
    completion.set_defaults(handler=functools.partial(print_script, root))


def print_script(root: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    print(script(root, args.shell))
    return 0


def script(root: argparse.ArgumentParser, shell: str) -> str:
    if shell == "fish":
        return FISH
    bash = _bash(root)
    return ZSH_PRELUDE + bash if shell == "zsh" else bash


def _bash(root: argparse.ArgumentParser) -> str:
    names = command_names(root)
    cases = "\n".join(_bash_case(name, parser_of(root, name)) for name in names)
    return (
        BASH_NAMES
        + f"""_modelgate() {{
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
    )


def _bash_case(name: str, parser: argparse.ArgumentParser) -> str:
    """One sub-command: its options, or after an option with choices, those choices."""
    options = " ".join(option for action in parser._actions for option in action.option_strings)
    lines = [f"        {name}) words='{options}'", '            case "$prev" in']
    if "--namespace" in parser._option_string_actions:
        lines.append("                -n|--namespace) words=$(_modelgate_names) ;;")
    lines += [
        f"                {'|'.join(action.option_strings)}) words='{' '.join(map(str, action.choices))}' ;;"
        for action in parser._actions
        if action.option_strings and action.choices
    ]
    # An option's free value (a name, a file): nothing from us, so that the shell completes a file.
    free = [
        o
        for a in parser._actions
        if a.option_strings and a.nargs != 0 and not a.choices and "--namespace" not in a.option_strings
        for o in a.option_strings
    ]
    if free:
        lines.append(f"                {'|'.join(free)}) words='' ;;")
    if parser.get_default(COMPLETES) == ROLLOUTS:  # its NAME: the namespace's rollouts
        lines.append('                *) [[ "$cur" == -* ]] || words=$(_modelgate_names) ;;')
    return "\n".join([*lines, "            esac ;;"])
