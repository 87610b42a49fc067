"""README.md and docs/*.md keep paragraphs short enough to read: no prose paragraph (a list item
counts as one) over 120 words, no table cell over 60. Code blocks, headings and HTML comments are
not prose. The API reference pages are generated from the CRDs (tooling.docs_gen), one row per
field with its description, bounds and rules; their cells are the field descriptions of the API
models and are exempt here (their paragraphs are not)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tooling import docs_gen

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_PARAGRAPH_WORDS = 120
MAX_CELL_WORDS = 60
# Generated from field descriptions: a long cell is a long description in operator/modelgate/api.
CELLS_EXEMPT = {
    docs_gen.API_REFERENCE.name,
    docs_gen.EVALUATION_API_REFERENCE.name,
    *(reference.name for _, reference in docs_gen.POLICY_REFERENCES),
}
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")
CELL_SEPARATOR = re.compile(r"(?<!\\)\|")


@dataclass(frozen=True)
class Prose:
    line: int  # where it starts, 1-based
    text: str

    @property
    def words(self) -> int:
        return len(self.text.split())


def _is_break(stripped: str) -> bool:
    return not stripped or stripped.startswith(("#", "<!--", "|"))


def paragraphs_and_cells(markdown: str) -> tuple[list[Prose], list[Prose]]:
    paragraphs: list[Prose] = []
    cells: list[Prose] = []
    current: list[str] = []
    start = 0
    fenced = False

    def close() -> None:
        if current:
            paragraphs.append(Prose(start, " ".join(current)))
            current.clear()

    for number, line in enumerate(markdown.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            close()
        elif fenced or _is_break(stripped):
            close()
            if not fenced and stripped.startswith("|"):
                cells.extend(Prose(number, cell) for cell in CELL_SEPARATOR.split(stripped.strip("|")))
        else:
            item = LIST_ITEM.match(line)
            if item:
                close()
            if not current:
                start = number
            current.append(line[item.end() :].strip() if item else stripped)  # the marker is no word
    close()
    return paragraphs, cells


def test_the_reader_finds_long_paragraphs_items_and_cells() -> None:
    long = " ".join(["word"] * (MAX_PARAGRAPH_WORDS + 1))
    wide = " ".join(["word"] * (MAX_CELL_WORDS + 1))
    table = f"| a | b |\n| --- | --- |\n| {wide} | x |\n"
    markdown = f"# Title\n\n{long}\n\n- short\n- {long}\n\n```sh\n{long}\n```\n\n{table}"
    paragraphs, cells = paragraphs_and_cells(markdown)
    assert [(p.line, p.words) for p in paragraphs] == [
        (3, 121),
        (5, 1),
        (6, 121),
    ]  # the code block is not prose
    assert max(cell.words for cell in cells) == MAX_CELL_WORDS + 1


def _over(kind: str, found: list[Prose], limit: int) -> list[str]:
    return [f"{kind} at line {p.line}: {p.words} words (at most {limit})" for p in found if p.words > limit]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_paragraphs_and_table_cells_are_short(page: Path) -> None:
    paragraphs, cells = paragraphs_and_cells(page.read_text())
    problems = _over("paragraph", paragraphs, MAX_PARAGRAPH_WORDS)
    if page.name not in CELLS_EXEMPT:
        problems += _over("table cell", cells, MAX_CELL_WORDS)
    assert not problems, (
        f"{page.relative_to(ROOT)}: split long paragraphs (shorter paragraphs, a list or subheads) and move"
        f" a long cell's explanation under its table: {'; '.join(problems)}"
    )
