"""`modelgate completion bash`: the script, run by bash as it completes, offers the parser's own
sub-commands, options and choices."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from modelgate.cli.completion import script
from modelgate.cli.help_text import command_names
from modelgate.cli.main import build_parser

PARSER = build_parser()
BASH = shutil.which("bash")


def completed(*words: str) -> set[str]:
    """What bash offers for the last of `words` (the word being typed, maybe empty)."""
    assert BASH is not None
    typed = " ".join(f"'{word}'" for word in words)
    program = f"{script(PARSER, 'bash')}\nCOMP_WORDS=({typed}); COMP_CWORD={len(words) - 1}; _modelgate; "
    program += 'printf "%s\\n" "${COMPREPLY[@]}"'
    done = subprocess.run([BASH, "--norc", "-c", program], capture_output=True, text=True, check=True)
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
