"""docs/architecture.md follows the code: it names every module of the package (its module tables
are generated from the docstrings: tooling/module_table_doc.py), no table repeats a row, and what
it says a package imports is what the code imports (the import graph, read by grimp)."""

from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path

import grimp
import pytest

from tests.unit.package_modules import PACKAGE, modules
from tooling import docs_gen
from tooling.module_table_doc import package_rows, summary

REPOSITORY = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPOSITORY / "docs" / "architecture.md"
# A module path in backquotes, optionally with what follows it (`routers/base.py:TrafficRouter`).
NAMED = re.compile(r"`([\w*/]+\.py)(?::\w+)?`")
REGENERATE = "run `make generate` and commit the result"


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


def repeated_rows(text: str) -> list[str]:
    """The first cells that more than one row of one table holds."""
    repeated: list[str] = []
    for table in re.findall(r"(?:^\|.*\|\n)+", text, flags=re.MULTILINE):
        cells = [row.split("|")[1].strip() for row in table.splitlines()[2:]]
        repeated += [cell for cell, count in Counter(cells).items() if cell and count > 1]
    return repeated


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


def test_the_module_tables_are_generated() -> None:
    committed = ARCHITECTURE.read_text()
    assert committed == docs_gen.generated_files(REPOSITORY)[docs_gen.ARCHITECTURE], (
        f"{docs_gen.ARCHITECTURE}'s module tables are stale: {REGENERATE}"
    )


def test_every_module_has_one_row_under_its_package() -> None:
    rows = package_rows()
    paths = [row.path for package in rows.values() for row in package]
    assert sorted(paths) == sorted(m.relative for m in modules())
    for package, package_modules in rows.items():
        assert {Path(row.path).parent.as_posix() for row in package_modules} <= {package or "."}
    assert list(rows) == sorted(rows)


def test_no_table_repeats_a_row() -> None:
    assert repeated_rows(ARCHITECTURE.read_text()) == []


def test_a_repeated_row_is_found() -> None:
    row = next(
        line for line in ARCHITECTURE.read_text().splitlines() if line.startswith("| `core/engine.py`")
    )
    text = ARCHITECTURE.read_text().replace(row, f"{row}\n{row}")
    assert repeated_rows(text) == ["`core/engine.py`"]


@pytest.mark.parametrize(
    ("docstring", "expected"),
    [
        ("One line.\n\nThe rest.", "One line."),
        (
            "A sentence that wraps\nonto a second line. Then more.",
            "A sentence that wraps onto a second line.",
        ),
        ("Abbreviations (e.g. this) and versions 0.34.0 do not end it.", None),
        ("No period at all", "No period at all"),
    ],
)
def test_a_summary_is_the_first_sentence(docstring: str, expected: str | None) -> None:
    assert summary(docstring) == (expected or docstring)


# -- what the page says a package imports -------------------------------------------------------------
@dataclass(frozen=True)
class ImportsOnly:
    """A sentence of the page: "`importer` imports `a/`, `b.py` ... [and the standard library] only".
    `importer` imports nothing of the package or outside the standard library but what it names."""

    words: str  # as the page says it (white space aside)

    @property
    def importer(self) -> str:
        return re.findall(r"`([^`]+)`", self.words)[0]

    @property
    def allowed(self) -> tuple[str, ...]:
        return tuple(re.findall(r"`([^`]+)`", self.words)[1:])


CLAIMS = (
    ImportsOnly("`core/` imports `api/` and the standard library only"),
    ImportsOnly("`modelevaluation/engine/` imports `api/`, `core/` and the standard library only"),
    ImportsOnly(
        "`core/tick.py` imports `api/`, `core/actions.py`, `core/metric_verdicts.py`, `core/model.py` "
        "and `core/reasons.py` only"
    ),
)
# What the page once said (the accumulator "imported downward", below everything it serves), and the
# code contradicts: it imports core's actions, and with them what decides them.
IMPORTED_DOWNWARD = ImportsOnly("`core/tick.py` imports `api/`, `core/model.py` and `core/reasons.py` only")


@cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph(PACKAGE, include_external_packages=True)


def _dotted(path: str) -> str:
    return ".".join([PACKAGE, *path.removesuffix("/").removesuffix(".py").split("/")])


def _within(module: str, path: str) -> bool:
    dotted = _dotted(path)
    return module == dotted or (path.endswith("/") and module.startswith(dotted + "."))


def contradictions(claim: ImportsOnly) -> set[str]:
    """What `claim.importer` imports that the claim does not allow."""
    graph = _graph()
    importers = {m for m in graph.modules if _within(m, claim.importer)}
    assert importers, f"{claim.importer} is not a module of the package"
    imported = set().union(*(graph.find_modules_directly_imported_by(m) for m in importers))
    return {
        name
        for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names
        and not any(_within(name, path) for path in (claim.importer, *claim.allowed))
    }


def _page_words() -> str:
    return " ".join(ARCHITECTURE.read_text().split())


@pytest.mark.parametrize("claim", CLAIMS, ids=lambda claim: claim.importer)
def test_what_the_page_says_is_imported_is(claim: ImportsOnly) -> None:
    assert claim.words in _page_words(), f"the page no longer says {claim.words!r}: drop the claim here"
    assert contradictions(claim) == set()


def test_a_claim_the_import_graph_contradicts_is_found() -> None:
    assert "modelgate.core.actions" in contradictions(IMPORTED_DOWNWARD)
