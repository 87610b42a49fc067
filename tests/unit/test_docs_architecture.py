"""docs/architecture.md names every module of the package: by its path relative to the package
(`core/manual_commands.py`), or by a glob it documents (`cli/report*.py`)."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import Path

from tests.unit.package_modules import modules

REPOSITORY = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPOSITORY / "docs" / "architecture.md"
# A module path in backquotes, optionally with what follows it (`routers/base.py:TrafficRouter`).
NAMED = re.compile(r"`([\w*/]+\.py)(?::\w+)?`")


def named_paths(text: str) -> set[str]:
    return set(NAMED.findall(text))


def unnamed_modules(text: str) -> list[str]:
    named = named_paths(text)
    globs = [name for name in named if "*" in name]
    return [
        m.relative
        for m in modules()
        if not m.is_package and m.relative not in named and not any(fnmatchcase(m.relative, g) for g in globs)
    ]


def test_every_module_is_named_in_the_architecture() -> None:
    assert unnamed_modules(ARCHITECTURE.read_text()) == []


def test_every_named_module_exists() -> None:
    """In the package, or (tests, tooling) in the repository."""
    relative = {m.relative for m in modules()}
    named = {name for name in named_paths(ARCHITECTURE.read_text()) if "*" not in name}
    assert {name for name in named - relative if not (REPOSITORY / name).is_file()} == set()


def test_a_module_missing_from_the_page_is_found() -> None:
    text = ARCHITECTURE.read_text().replace("`core/manual_commands.py`", "the commands")
    assert unnamed_modules(text) == ["core/manual_commands.py"]
