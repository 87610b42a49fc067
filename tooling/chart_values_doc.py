"""The values table of charts/modelgate/README.md, from the comments of the chart's values.yaml, and
the table of other charts' names for them, from files/other-charts-values.yaml.

A value's description is the block of comment lines right above its key (a leading `-- ` is dropped,
as helm-docs writes it). A mapping whose entries have no comments of their own is one row, its
default the whole mapping; otherwise each entry is a row. Every row must have a description: an
undocumented value fails `make generate` and the tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_]+):")
_COMMENT = re.compile(r"^ *# ?(?P<text>.*)$")

Path = tuple[str, ...]


class UndocumentedValuesError(ValueError):
    def __init__(self, paths: list[str]) -> None:
        super().__init__(
            f"values.yaml: no comment above {', '.join(paths)}: "
            "describe each value in a comment above its key"
        )


@dataclass(frozen=True)
class ValueRow:
    path: str
    default: str
    description: str


def comments_by_path(text: str) -> dict[Path, str]:
    """The comment block right above each key of a values.yaml, by the key's path."""
    comments: dict[Path, str] = {}
    stack: list[tuple[int, str]] = []
    pending: list[str] = []
    for line in text.splitlines():
        comment = _COMMENT.match(line)
        if comment:
            pending.append(comment.group("text").removeprefix("-- ").strip())
            continue
        key = _KEY.match(line)
        if key:
            indent = len(key.group("indent"))
            stack = [(level, name) for level, name in stack if level < indent] + [(indent, key.group("key"))]
            if pending:
                comments[tuple(name for _, name in stack)] = " ".join(pending)
        pending = []
    return comments


def _documented_below(path: Path, comments: Mapping[Path, str]) -> bool:
    return any(len(other) > len(path) and other[: len(path)] == path for other in comments)


def _rows(node: Mapping[str, Any], path: Path, comments: Mapping[Path, str]) -> Iterator[tuple[Path, Any]]:
    for key, value in node.items():
        here = (*path, key)
        if isinstance(value, dict) and value and _documented_below(here, comments):
            if here in comments:
                yield here, None
            yield from _rows(value, here, comments)
        else:
            yield here, value


def value_rows(text: str) -> list[ValueRow]:
    comments = comments_by_path(text)
    rows = list(_rows(yaml.safe_load(text), (), comments))
    undocumented = [".".join(path) for path, _ in rows if path not in comments]
    if undocumented:
        raise UndocumentedValuesError(undocumented)
    return [
        ValueRow(".".join(path), "" if value is None else json.dumps(value), comments[path])
        for path, value in rows
    ]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def values_table(text: str) -> list[str]:
    """The markdown table of every value of a values.yaml: key, default, description."""
    lines = ["| value | default | description |", "| --- | --- | --- |"]
    for row in value_rows(text):
        default = f"`{_cell(row.default)}`" if row.default else ""
        lines.append(f"| `{row.path}` | {default} | {_cell(row.description)} |")
    return lines


def other_charts_table(text: str) -> list[str]:
    """The markdown table of other charts' names (files/other-charts-values.yaml): each name, whose
    it is and modelgate's value for it (or what stands instead)."""
    lines = ["| name | in | modelgate's |", "| --- | --- | --- |"]
    for entry in yaml.safe_load(text):
        ours = f"`{entry['ours']}`" if "ours" in entry else _cell(entry["instead"])
        note = f" ({_cell(entry['note'])})" if "note" in entry else ""
        chart = entry["of"].removesuffix("'s").removesuffix("'")
        lines.append(f"| `{entry['name']}` | {chart} | {ours}{note} |")
    return lines
