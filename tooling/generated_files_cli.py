"""The command line every whole-file generator shares: rewrite the files that are out of date, or with
--check change nothing and exit 1 naming them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
COMMAND = "make generate"


def generator_main(
    prog: str, doc: str | None, generated_files: Callable[[], Mapping[Path, str]], argv: Sequence[str] | None
) -> int:
    """`generated_files` gives each file, relative to the repository, with the content it should have."""
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the repository (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is stale")
    args = parser.parse_args(argv)
    stale = 0
    for path, content in generated_files().items():
        target = args.root / path
        if target.exists() and target.read_text() == content:
            continue
        if args.check:
            print(f"{path} is out of date: run `{COMMAND}`", file=sys.stderr)
            stale = 1
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            print(f"wrote {path}")
    return stale
