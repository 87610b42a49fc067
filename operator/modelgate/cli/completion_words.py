"""What to offer for the word being typed on a `modelgate` command line.

What to offer for the word being typed on a `modelgate` command line: the commands, a command's
options, an option's choices, and names read from the cluster (namespaces after -n, the namespace's
ModelRollouts where a command takes one). One answer for every shell: fish asks it for every word,
bash and zsh for the names, and kubectl (`kubectl modelrollout <TAB>`, kubectl 1.26 or later) runs
the `kubectl_complete-modelrollout` executable, which prints it in kubectl's plugin format."""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from modelgate.cli.help_text import parser_of
from modelgate.cli.main import COMMANDS, build_parser
from modelgate.cli.target import COMPLETES, ROLLOUTS, list_rollouts
from modelgate.kube import Kube, default_namespace

# How long a lookup of names may take: the shell waits for it, and says nothing if it fails.
NAMES_TIMEOUT = 2.0
NAMESPACES = "namespaces"
# kubectl's plugin completion reads Cobra's directives from a last line `:<n>`.
COBRA_DEFAULT, COBRA_NO_FILES = 0, 4
NAMESPACE_OPTION = "--namespace"

# kind (NAMESPACES or ROLLOUTS), namespace (None: the kubeconfig's), kubeconfig (None: the default)
Names = Callable[[str, str | None, Path | None], list[str]]


@dataclass(frozen=True)
class Offer:
    words: tuple[str, ...]
    files: bool  # the shell may offer file names too (an option whose value is a path)


def offer(words: Sequence[str], parser_for: Callable[[str], argparse.ArgumentParser], names: Names) -> Offer:
    """`words`: the command line after the program's name, the last being the word typed so far."""
    *before, typed = words or [""]
    if not before:
        return Offer(_starting(COMMANDS, typed), files=False)
    if before[0] not in COMMANDS:
        return Offer((), files=True)
    parser = parser_for(before[0])
    arguments = before[1:]
    taking = _value_option(parser, arguments[-1]) if arguments else None
    kubeconfig = _value_of(parser, arguments, "--kubeconfig")
    if taking is not None and taking.choices:
        return Offer(_starting(map(str, taking.choices), typed), files=False)
    if taking is not None and NAMESPACE_OPTION in taking.option_strings:
        return Offer(_starting(names(NAMESPACES, None, _path(kubeconfig)), typed), files=False)
    if taking is not None:
        return Offer((), files=True)
    if typed.startswith("-"):
        options = (o for a in parser._actions if a.help != argparse.SUPPRESS for o in a.option_strings)
        return Offer(_starting(options, typed), files=False)
    if parser.get_default(COMPLETES) == ROLLOUTS and not _positionals(parser, arguments):
        namespace = _value_of(parser, arguments, NAMESPACE_OPTION)
        return Offer(_starting(names(ROLLOUTS, namespace, _path(kubeconfig)), typed), files=False)
    return Offer((), files=True)


def cluster_names(kind: str, namespace: str | None, kubeconfig: Path | None) -> list[str]:
    """The names from the cluster; none when it cannot be asked within NAMES_TIMEOUT."""
    try:
        kube = Kube.from_kubeconfig(
            kubeconfig,
            request_timeout=NAMES_TIMEOUT,
            retries=0,
            default_kubeconfig=os.environ.get("KUBECONFIG"),
        )
        if kind == NAMESPACES:
            return kube.namespace_names()
        listed = list_rollouts(kube, namespace or default_namespace(kubeconfig))
        return [str(item["metadata"]["name"]) for item in listed]
    except Exception:
        return []


def kubectl_complete(argv: list[str] | None = None) -> int:
    """`kubectl_complete-modelrollout WORD...`: kubectl's plugin completion (also fish's)."""
    offered = offer(sys.argv[1:] if argv is None else argv, _parser, cluster_names)
    for word in offered.words:
        print(word)
    print(f":{COBRA_DEFAULT if offered.files else COBRA_NO_FILES}")
    return 0


def _parser(command: str) -> argparse.ArgumentParser:
    return parser_of(build_parser(command), command)


def _starting(candidates: Iterable[str], typed: str) -> tuple[str, ...]:
    return tuple(sorted({c for c in candidates if c.startswith(typed)}))


def _value_option(parser: argparse.ArgumentParser, word: str) -> argparse.Action | None:
    """The option `word` names if it takes a value (the next word), else None."""
    action = parser._option_string_actions.get(word)
    return action if action is not None and action.nargs != 0 else None


def _value_of(parser: argparse.ArgumentParser, arguments: Sequence[str], option: str) -> str | None:
    """The value given to `option` (or one of its aliases) among the words, if any."""
    action = parser._option_string_actions.get(option)
    for word, following in itertools.pairwise(arguments):
        if action is not None and word in action.option_strings:
            return following
    return None


def _positionals(parser: argparse.ArgumentParser, arguments: Sequence[str]) -> list[str]:
    """The words that are positional arguments: neither an option nor an option's value."""
    found: list[str] = []
    for index, word in enumerate(arguments):
        value = index > 0 and _value_option(parser, arguments[index - 1]) is not None
        if not word.startswith("-") and not value:
            found.append(word)
    return found


def _path(text: str | None) -> Path | None:
    return None if text is None else Path(text).expanduser()
