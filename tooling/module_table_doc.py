"""docs/architecture.md's module table: every module of the package, with its docstring's summary.

One table per package (the top level first, then each subpackage by path), its modules sorted; a
package's own docstring heads its table. A module's summary is the first sentence of its docstring's
first paragraph, so a docstring written as PEP 257 asks (one summary line, a blank line, the rest)
gives its first line. A module without a docstring is an error naming the file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import modelgate

PACKAGE_ROOT = Path(modelgate.__file__).resolve().parent
# A sentence ends at a period followed by white space or the end, but not in "e.g." or "i.e.".
_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.(?=\s|$)")


@dataclass(frozen=True)
class ModuleRow:
    path: str  # relative to the package, e.g. core/engine.py
    summary: str


def summary(docstring: str) -> str:
    """The first sentence of the first paragraph, on one line."""
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    end = _SENTENCE_END.search(paragraph)
    return paragraph[: end.end()] if end else paragraph


def module_summary(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(), filename=str(path)))
    if not docstring:
        raise ValueError(
            f"{path} has no docstring: its first line is its row in docs/architecture.md's module table"
        )
    return summary(docstring)


def package_rows(root: Path = PACKAGE_ROOT) -> dict[str, list[ModuleRow]]:
    """Each package's directory relative to `root` ("" for the top level), with its modules' rows,
    the package's own (`__init__.py`) first, then the others by name."""
    packages: dict[str, list[ModuleRow]] = {}
    for path in sorted(root.rglob("*.py"), key=lambda p: (p.name != "__init__.py", p.as_posix())):
        if "__pycache__" in path.parts:
            continue
        relative = path.relative_to(root)
        directory = relative.parent.as_posix()
        packages.setdefault("" if directory == "." else directory, []).append(
            ModuleRow(relative.as_posix(), module_summary(path))
        )
    return dict(sorted(packages.items()))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(rows: list[ModuleRow]) -> Iterator[str]:
    yield "| module | what it is |"
    yield "| --- | --- |"
    for row in rows:
        yield f"| `{row.path}` | {_cell(row.summary)} |"


def module_tables(root: Path = PACKAGE_ROOT) -> list[str]:
    lines: list[str] = []
    for directory, rows in package_rows(root).items():
        name = f"`{directory}/`" if directory else "`modelgate`"
        lines += [f"**{name}**", "", *_table(rows), ""]
    return lines[:-1]
