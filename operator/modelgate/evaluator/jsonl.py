"""Reading JSONL input (test sets, recorded requests) line by line, with errors that name the source,
the line and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class InputError(ValueError):
    """Input that cannot be used: says where (source, line, field) and what was expected."""


def json_lines(text: str, source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an error."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as error:
            raise InputError(f"{source}, line {number}: not JSON: {error}") from None
        if not isinstance(value, dict):
            raise InputError(f"{source}, line {number}: expected a JSON object, got {type(value).__name__}")
        yield number, value


def parse_line(model: type[M], value: dict[str, Any], where: str) -> M:
    """`value` as a `model`, or an InputError naming each bad field (dotted, as in the JSON)."""
    try:
        return model.model_validate(value)
    except ValidationError as error:
        problems = "; ".join(_problem(e["loc"], e["msg"]) for e in error.errors())
        raise InputError(f"{where}: {problems}") from None


def _problem(location: tuple[int | str, ...], message: str) -> str:
    # Our own validators' ValueErrors arrive as "Value error, ..."; the prefix says nothing.
    text = message.removeprefix("Value error, ")
    return f"{'.'.join(str(part) for part in location)}: {text}" if location else text
