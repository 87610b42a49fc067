"""`modelgate completion bash`: the script, run by bash as it completes, offers the parser's own
sub-commands, options and choices, and asks the names' completer for namespaces and rollouts."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from modelgate.cli.completion import COMPLETER, script
from modelgate.cli.help_text import command_names
from modelgate.cli.main import build_parser

PARSER = build_parser()
BASH = shutil.which("bash")


def completed(*words: str, path: str | None = None) -> set[str]:
    """What bash offers for the last of `words` (the word being typed, maybe empty); `path`: where
    it finds the names' completer (none by default)."""
    assert BASH is not None
    typed = " ".join(f"'{word}'" for word in words)
    program = f"{script(PARSER, 'bash')}\nCOMP_WORDS=({typed}); COMP_CWORD={len(words) - 1}; _modelgate; "
    program += 'printf "%s\\n" "${COMPREPLY[@]}"'
    env = {**os.environ, "PATH": path or "/usr/bin:/bin"}
    done = subprocess.run(
        [BASH, "--norc", "-c", program], capture_output=True, text=True, check=True, env=env
    )
    return set(done.stdout.split())


pytestmark = pytest.mark.skipif(BASH is None, reason="no bash to complete in")


def test_every_sub_command_is_offered() -> None:
    assert completed("modelgate", "") == set(command_names(PARSER))
    assert completed("modelgate", "st") == {"status"}


def test_a_sub_command_s_options_and_an_option_s_choices() -> None:
    assert {"--watch", "--timeout", "--output"} <= completed("modelgate", "status", "--")
    assert completed("modelgate", "get", "-o", "") == {"table", "json"}
    assert completed("modelgate", "report", "-o", "") == set()  # a file name: the shell's own completion


def test_zsh_runs_the_same_script_through_bashcompinit() -> None:
    zsh = script(PARSER, "zsh")
    assert "bashcompinit" in zsh and zsh.endswith(script(PARSER, "bash"))


@pytest.fixture
def completer(tmp_path: Path) -> str:
    """A names' completer that answers with the words it was given, each prefixed `got-`, then
    Cobra's directive line (which bash leaves out)."""
    fake = tmp_path / COMPLETER
    fake.write_text('#!/bin/sh\nfor word in "$@"; do echo "got-$word"; done\necho :4\n')
    fake.chmod(0o755)
    return f"{tmp_path}:/usr/bin:/bin"


def test_a_namespace_and_a_rollout_are_asked_of_the_completer_with_the_line(completer: str) -> None:
    assert completed("modelgate", "status", "-n", "", path=completer) == {"got-status", "got--n", "got-"}
    assert completed("modelgate", "promote", "got-p", path=completer) == {"got-promote"}
    assert "got-abort" in completed("modelgate", "abort", "-n", "serving", "", path=completer)


def test_options_and_other_values_do_not_ask_the_completer(completer: str) -> None:
    assert not any(w.startswith("got-") for w in completed("modelgate", "status", "--", path=completer))
    assert completed("modelgate", "get", "-o", "", path=completer) == {"table", "json"}
    assert completed("modelgate", "plan", "-f", "", path=completer) == set()  # a file: the shell's own


def test_without_the_completer_a_name_is_offered_nothing() -> None:
    assert completed("modelgate", "status", "") == set()
