"""PromQL broken into lines only between its tokens, so a wrapped query still runs.

PromQL broken into lines only between its tokens: a metric or label name, a quoted string, a
number or a duration is never cut, so a query copied from a wrapped terminal or report still runs
(once its line breaks are removed). In the terminal a renderable that fills each line to the width
given; in the HTML report a <wbr> between tokens where the browser may break."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import escape

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

# One token each: a quoted string (escapes included), a name (metric, label, function, keyword), a
# number or duration (5m, 1h30m, 0.95, 1e-3), a two-character operator, a run of spaces, any other
# character (a bracket, a comma, an operator).
TOKEN = re.compile(
    r""""(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`"""
    r"|[A-Za-z_:][A-Za-z0-9_:]*"
    r"|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:[a-z]+\d*)*"
    r"|=~|!~|!=|==|>=|<="
    r"|\s+"
    r"|."
)


def tokens(query: str) -> list[str]:
    return TOKEN.findall(query)


def promql_lines(query: str, width: int) -> list[str]:
    """The query in lines of at most `width` characters, each break between two tokens, at a space
    where one leaves the next line room (the space dropped); a token longer than `width` has a line
    of its own."""
    lines: list[str] = []
    line: list[str] = []
    for token in tokens(query):
        if line and not token.isspace() and _length(line) + len(token) > width:
            cut = _break(line, len(token), width)
            lines.append("".join(line[:cut]).rstrip())
            line = line[cut + 1 :] if cut < len(line) else []  # the space at the break dropped
        if line or not token.isspace():
            line.append(token)
    if _length(line):
        lines.append("".join(line).rstrip())
    return lines


def _break(line: list[str], coming: int, width: int) -> int:
    """Where to end the line: at its last space if what follows it still fits, else before the
    token coming."""
    for index in range(len(line) - 1, 0, -1):
        if line[index].isspace():
            return index if _length(line[index + 1 :]) + coming <= width else len(line)
    return len(line)


def _length(line: list[str]) -> int:
    return sum(len(token) for token in line)


def promql_html(query: str) -> str:
    """The query, escaped, with a break opportunity (<wbr>) between tokens and nowhere else."""
    return "<wbr>".join(escape(token) for token in tokens(query))


class PromQL:
    """A query as a rich renderable: lines filled to the width rich gives it, broken between tokens."""

    def __init__(self, query: str, style: str = "") -> None:
        self.query = query
        self.style = style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield from self._lines(options.max_width)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        longest = max((len(token) for token in tokens(self.query)), default=0)
        return Measurement(min(longest, options.max_width), len(self.query))

    def _lines(self, width: int) -> Iterator[Text]:
        for line in promql_lines(self.query, width):
            # Only a token wider than the whole width folds: there is no other way to show it.
            yield Text(line, style=self.style, overflow="fold")
