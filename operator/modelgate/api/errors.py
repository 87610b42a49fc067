"""Validation errors that name the offending field by its camelCase path, e.g. `spec.steps[1].setWeight`."""

import re
from collections.abc import Sequence, Sized

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from modelgate.api.fields import PATTERN_HINTS


class FieldPathError(ValueError):
    """Raised by a model validator about a field below the model, like a CEL rule's fieldPath."""

    def __init__(self, field_path: str, reason: str) -> None:
        super().__init__(f"{field_path}: {reason}")
        self.field_path = field_path
        self.reason = reason


class InvalidSpecError(ValueError):
    """A spec (or status) the operator cannot use; `problems` holds one `path: reason` line per problem."""

    def __init__(self, problems: Sequence[str], root: str = "spec") -> None:
        super().__init__(f"invalid ModelRollout {root}: " + "; ".join(problems))
        self.problems = tuple(problems)

    @classmethod
    def from_validation_error(cls, error: ValidationError, root: str) -> "InvalidSpecError":
        return cls(
            [_describe(detail, root) for detail in error.errors() if not _counts_only_valid_items(detail)],
            root,
        )


_SHOULD = re.compile(r"^\w+ should ")


def _counts_only_valid_items(detail: ErrorDetails) -> bool:
    # Pydantic checks a list's length after dropping its invalid items, so a list with invalid items
    # also fails its minimum length; the items' own errors already say what is wrong.
    value = detail["input"]
    minimum = detail.get("ctx", {}).get("min_length", 0)
    return detail["type"] == "too_short" and isinstance(value, Sized) and len(value) >= minimum


def _describe(detail: ErrorDetails, root: str) -> str:
    path = root + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in detail["loc"])
    context = detail.get("ctx", {})
    cause = context.get("error")
    if isinstance(cause, FieldPathError):
        return f"{path}.{cause.field_path}: {cause.reason}"
    if isinstance(cause, Exception):
        return f"{path}: {cause}"
    if detail["type"] == "missing":
        return f"{path}: required"
    if detail["type"] == "extra_forbidden":
        return f"{path}: unknown field"
    if detail["type"] == "string_pattern_mismatch":
        reason = PATTERN_HINTS.get(context["pattern"], detail["msg"])
    else:
        reason = _SHOULD.sub("must ", detail["msg"])
    value = detail["input"]
    if isinstance(value, str | int | float):
        return f"{path}: {reason} (got {value!r})"
    return f"{path}: {reason}"
