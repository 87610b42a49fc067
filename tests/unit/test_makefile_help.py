"""`make help` (also plain `make`) lists every target a user can run, each on one line of at most 80
columns, so that the Makefile's targets cannot grow one that no one can find."""

from __future__ import annotations

import re
import subprocess

from testbed.versions import REPO_ROOT


def _phony_targets() -> set[str]:
    """Every `.PHONY:` line's targets: a target may be declared beside its rule."""
    makefile = (REPO_ROOT / "Makefile").read_text()
    return {target for line in re.findall(r"^\.PHONY:(.*)$", makefile, re.M) for target in line.split()}


def test_make_help_lists_every_target_within_80_columns() -> None:
    shown = subprocess.run(
        ["make", "--no-print-directory", "-C", REPO_ROOT], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert {line.split()[0] for line in shown} == _phony_targets()
    assert all(len(line) <= 80 and len(line.split()) > 1 for line in shown)
